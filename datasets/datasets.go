package datasets

import (
	"embed"
	"io/fs"
)

// FS holds one folder per dataset, named as subgraph.Load names it.
//
//go:embed cora
var FS embed.FS

// Names lists the datasets in FS, sorted.
func Names() []string {
	ents, _ := fs.ReadDir(FS, ".")
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}
