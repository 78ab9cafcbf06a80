package convert

import (
	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/vincent-petithory/dataurl"
)

// DataFile is a file as upstream's server writes the files it adds: mode
// 0644, overwritten, its contents a percent-escaped data URL.
func DataFile(path string, data []byte) types.File {
	src := "data:," + dataurl.Escape(data)
	mode, overwrite := 0o644, true
	return types.File{
		Node:          types.Node{Path: path, Overwrite: &overwrite},
		FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: &src}, Mode: &mode},
	}
}
