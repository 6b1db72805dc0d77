module github.com/qgtc/qgtc

go 1.26

require (
	github.com/campoy/embedmd v1.0.0 // indirect
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	github.com/nlpodyssey/gopickle v0.2.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/sbinet/npyio v0.6.0 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.41.0 // indirect
	gonum.org/v1/gonum v0.9.3 // indirect
)
