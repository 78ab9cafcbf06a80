// Command c uses b.
package main

import "example.com/mod/b"

func main() { println(b.B()) }
