// Package cmdline is what mcs's commands share of their command lines: flags, environment, exit codes and the files flags name.
package cmdline
