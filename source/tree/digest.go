package tree

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"strconv"
)

// Digest is a content key of paths and, for a directory, of everything
// under it (walked as Walk walks it): each path with its bytes, or with why
// they were not read (absent, not a regular file, over lim), so an edit
// that keeps a file's size and modification time still changes it. Files
// are read as a load reads them, through one budget of lim, so computing
// the key can neither block on a FIFO nor read more than a load would.
func Digest(lim Limits, paths ...string) [32]byte {
	h := sha256.New()
	b := &budget{Limits: lim}
	for _, root := range paths {
		Walk(root, func(p string, info fs.FileInfo, err error) error {
			h.Write([]byte(strconv.Quote(p)))
			switch {
			case err != nil:
				fmt.Fprintf(h, " err %v\n", err)
			case info.IsDir():
				h.Write([]byte(" dir\n"))
			default:
				data, err := b.readFile(osFiles{}, p)
				if err != nil {
					fmt.Fprintf(h, " unread %v\n", err)
					return nil
				}
				fmt.Fprintf(h, " %d\n", len(data))
				h.Write(data)
			}
			return nil
		})
	}
	return [32]byte(h.Sum(nil))
}
