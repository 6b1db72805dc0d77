# qgtc build targets. `make test` is what CI runs (.ci/run).
GO      ?= go
PKGS    := ./...
CORE    := ./bittensor/... ./quantize/... ./bmm/... ./cpu/... ./templates/...
FUZZTIME ?= 10s
BIN     := bin/qgtc

.PHONY: build test test-race fuzz-smoke bench fuzz lint generate check-generate gpu-test e2e interop multigpu manycore templates-gpu fpgpu-test scale demo clean

build:
	$(GO) build -o $(BIN) ./cmd/qgtc

# test: formatting, vet, every unit test, the race detector on the core
# packages, and a short smoke run of every fuzz target.
test:
	@echo "== gofmt"; out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@echo "== go vet"; $(GO) vet $(PKGS)
	@echo "== go test"; $(GO) test -count=1 $(PKGS)
	@echo "== go test -race (core)"; $(GO) test -count=1 -race -short $(CORE)
	@echo "== fuzz smoke"; $(MAKE) --no-print-directory fuzz-smoke FUZZTIME=3s

# fuzz-smoke runs each fuzz target for FUZZTIME. A failing run prints its
# output and fails, except go's own -fuzztime boundary flake
# (golang/go#51484): "context deadline exceeded" with no failing input
# written, which finds nothing (every finding writes a reproducer under
# testdata/fuzz) and is reported as such.
fuzz-smoke:
	@set -e; log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for pkg in $$($(GO) list $(PKGS)); do \
		dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
		for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
			echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
			$(GO) test -run='^$$' -fuzz="^$$f\$$" -fuzztime=$(FUZZTIME) $$pkg >$$log 2>&1 && continue; \
			if grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input written' $$log; then \
				echo "  go's -fuzztime boundary flake (golang/go#51484, no failing input): not a finding"; \
				continue; \
			fi; \
			cat $$log; exit 1; \
		done; \
	done

fuzz:
	$(MAKE) fuzz-smoke FUZZTIME=60s

# bench runs the benchmarks matching BENCH (default all) in BENCHPKGS, e.g.
#   make bench BENCHPKGS=./cpu BENCH='MM2Int$$/n=4096' BENCHFLAGS='-cpu 1,2'
BENCH ?= .
BENCHPKGS ?= $(PKGS)
BENCHFLAGS ?=
bench:
	$(GO) test -run='^$$' -bench='$(BENCH)' -benchmem $(BENCHFLAGS) $(BENCHPKGS)

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@latest $(PKGS)

# generate rebuilds the avo assembly and its Go stubs (cpu/_asm has its own
# go.mod; the module proxy fetches avo) and tcu's wgmma wrappers
# (tcu/kernels/gen_wgmma.py, python3).
generate:
	$(GO) generate ./...

# GENERATED are the committed outputs of go generate.
GENERATED := '*.s' '*_amd64.go' tcu/kernels/wgmma_ops.cuh

# check-generate fails when go generate changes or adds any of them.
check-generate: generate
	@git diff --exit-code -- $(GENERATED) || { echo "go generate changed committed files"; exit 1; }
	@new=$$(git status --porcelain --untracked-files=all -- $(GENERATED) | grep '^??' || true); \
		if [ -n "$$new" ]; then echo "go generate added files:"; echo "$$new"; exit 1; fi

# gpu-test builds, with no CUDA toolkit, the static binaries a GPU host runs.
gpu-test:
	mkdir -p build/gpu
	CGO_ENABLED=0 $(GO) test -c -o build/gpu/tcu.test ./tcu
	CGO_ENABLED=0 $(GO) build -o build/gpu/qgtc ./cmd/qgtc
	@echo "now run on the GPU host (device tool), carrying build/:"
	@echo "  STEPS='nvcc test bench base sanitize' bash bench/gpu/run.sh   # logs and the table in \$$OUT"
	@echo "  ./build/gpu/qgtc info && ./build/gpu/qgtc bench bmm --device gpu"

# e2e builds, with no CUDA toolkit, what bench/e2e/run.sh runs on a GPU
# host (carry build/e2e): qgtc, the tcu test binary, the PyG exporter, and
# qgtc at E2E_OLD (the tree before the redesign) for the before/after figure.
E2E_OLD ?= cb80f30
# interop builds what bench/interop/run.sh carries to a GPU host with PyG.
interop:
	mkdir -p build/interop
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o build/interop/qgtc ./cmd/qgtc
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o build/interop/export ./bench/interop/export

e2e:
	mkdir -p build/e2e
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o build/e2e/qgtc ./cmd/qgtc
	CGO_ENABLED=0 $(GO) test -c -trimpath -ldflags='-s -w' -o build/e2e/tcu.test ./tcu
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o build/e2e/export ./bench/e2e/export
	rm -rf build/e2e-old && mkdir -p build/e2e-old && git archive $(E2E_OLD) | tar -x -C build/e2e-old
	cd build/e2e-old && CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o ../e2e/qgtc-old ./cmd/qgtc
	rm -rf build/e2e-old
	@echo "now run on the GPU host (device tool), carrying build/e2e:"
	@echo "  STEPS='check speed' bash bench/e2e/run.sh   # tables and logs in \$$OUT"

# multigpu builds, with no CUDA toolkit, what bench/multigpu/run.sh runs
# on a host of several GPUs (carry build/multi).
multigpu:
	mkdir -p build/multi
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o build/multi/qgtc ./cmd/qgtc
	@echo "now run on a multi-GPU host (device tool, e.g. nvidia-h100-x4), carrying build/multi:"
	@echo "  STEPS='data speed' bash bench/multigpu/run.sh   # table.md and the runs' JSON in \$$OUT"

# scale builds what bench/scale/h200.sh runs on a host of two GPUs in one
# call (carry build/scale): a static, stripped qgtc.
scale:
	mkdir -p build/scale
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o build/scale/qgtc ./cmd/qgtc
	[ -f build/scale/model-a4w4.safetensors ] || B=build/scale bash bench/scale/model.sh
	@du -sh build/scale
	@echo "now run on the GPU host (device tool, nvidia-h200-x2, carrying build/scale), e.g.:"
	@echo "  BUDGET=510 OUT=\$$OUT bash bench/scale/h200.sh   # table.md, steps.txt, logs.tgz in \$$OUT"
	@echo "  (no GPU: SCALE=0.01 DEV=cpu MULTI=cpu bash bench/scale/h200.sh)"

# manycore builds what bench/manycore/run.sh runs on a many-core host with
# no Go toolchain (~30 MB, carried as build/manycore): static, stripped
# binaries of this tree and, in build/manycore/old, of OLD_REF (main before
# issue 19's work) as the baseline; OLD_REF= (empty) builds no old binaries.
OLD_REF ?= 7ef343e
manycore:
	mkdir -p build/manycore/old
	CGO_ENABLED=0 $(GO) test -c -ldflags='-s -w' -o build/manycore/layers.test ./layers
	CGO_ENABLED=0 $(GO) build -ldflags='-s -w' -o build/manycore/qgtc ./cmd/qgtc
	CGO_ENABLED=0 $(GO) build -ldflags='-s -w' -o build/manycore/export ./bench/e2e/export
	@set -e; [ -n "$(OLD_REF)" ] || exit 0; src=$$(mktemp -d); trap 'rm -rf $$src' EXIT; \
		git archive $(OLD_REF) | tar -x -C $$src; \
		cd $$src && CGO_ENABLED=0 $(GO) test -c -ldflags='-s -w' -o $(CURDIR)/build/manycore/old/layers.test ./layers && \
		CGO_ENABLED=0 $(GO) build -ldflags='-s -w' -o $(CURDIR)/build/manycore/old/qgtc ./cmd/qgtc
	@du -sh build/manycore
	@echo "now run on the many-core host (device tool, carrying build/manycore):"
	@echo "  bash bench/manycore/run.sh   # table.md, results.tsv, log.txt in \$$OUT"

# templates-gpu builds, with no CUDA toolkit, what bench/templates/run.sh
# runs on a GPU host (carry build/templates): the tcu test binary (the fp
# conformance tests) and fpbench, static and stripped.
templates-gpu:
	mkdir -p build/templates
	CGO_ENABLED=0 $(GO) test -c -trimpath -ldflags='-s -w' -o build/templates/tcu.test ./tcu
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o build/templates/fpbench ./bench/templates/fpbench
	@du -sh build/templates
	@echo "now run on the GPU host (device tool), carrying build/templates:"
	@echo "  BUDGET=1 bash bench/templates/run.sh   # table.md and logs/ in \$$OUT"

# fpgpu-test builds, with no CUDA toolkit, what bench/train/run.sh runs on a
# GPU host (carry build/fpgpu): the test binaries of full-precision
# training on the device (tcu's dense kernels, gpufp, qgtc train --device
# gpu), qgtc and the exporter for PyG, static and stripped.
fpgpu-test:
	mkdir -p build/fpgpu
	CGO_ENABLED=0 $(GO) test -c -trimpath -ldflags='-s -w' -o build/fpgpu/tcu.test ./tcu
	CGO_ENABLED=0 $(GO) test -c -trimpath -ldflags='-s -w' -o build/fpgpu/gpufp.test ./gpufp
	CGO_ENABLED=0 $(GO) test -c -trimpath -ldflags='-s -w' -o build/fpgpu/qgtc.test ./cmd/qgtc
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o build/fpgpu/qgtc ./cmd/qgtc
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o build/fpgpu/export ./bench/e2e/export
	@du -sh build/fpgpu
	@echo "now run on the GPU host (device tool), carrying build/fpgpu:"
	@echo "  STEPS=test bash bench/train/run.sh    # the GPU tests alone; logs in \$$OUT/logs"
	@echo "  bash bench/train/run.sh               # tests, then epochs against PyG: \$$OUT/table.md"

# demo: the default job, 4-bit GCN inference on the bundled Cora (the first
# run trains and caches the model, later runs load it).
demo: build
	./$(BIN) info
	./$(BIN) bmm demo
	./$(BIN) infer --dataset cora --bits 4

clean:
	rm -rf bin build
