module github.com/qgtc/qgtc

go 1.26.0

require (
	github.com/ebitengine/purego v0.11.3
	github.com/klauspost/cpuid/v2 v2.4.2
	github.com/spf13/pflag v1.0.10
	github.com/stretchr/testify v1.12.1
	golang.org/x/image v0.47.0
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
