package cutover

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// decode reads manifest files (YAML, several documents each) into
// objects, in order, skipping empty documents.
func decode(files [][]byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for i, f := range files {
		d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(f), 4096)
		for {
			var m map[string]any
			err := d.Decode(&m)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("manifest %d: %w", i, err)
			}
			if len(m) > 0 {
				out = append(out, &unstructured.Unstructured{Object: m})
			}
		}
	}
	return out, nil
}
