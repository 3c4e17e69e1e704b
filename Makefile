# admpo build, setup and test entry points.
GO      ?= go
BIN     := bin/admpo
# `admpo version` prints this (git describe of the work tree).
VERSION ?= $(shell git describe --always --dirty 2>/dev/null)
PKGS    := ./...
# Tests stay well under CI's limit on 2 cores; -p 1 keeps cgo-heavy packages
# from fighting over the cores.
TESTFLAGS ?= -count=1 -timeout 25m -p 1

.PHONY: all build setup setup-gpu setup-cuda-toolkit ptx test vet fmt bench demo quick clean

all: build

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/admpo

setup:
	bash scripts/setup.sh
	$(GO) mod download

# GPU pieces, never part of setup: ONNX Runtime 1.29.0 for CUDA 13 (core and
# CUDA provider) into the cache; with CUDA_TOOLKIT=1 also Debian's CUDA 11.8
# toolkit (non-free), needed only for `go build -tags cuda`.
setup-gpu:
	bash scripts/setup_gpu.sh $(if $(filter 1,$(CUDA_TOOLKIT)),--cuda-toolkit)

setup-cuda-toolkit:
	bash scripts/setup_gpu.sh --cuda-toolkit-only

# The device kernels' PTX (device/kernels/kernels.ptx, committed: most
# machines have no nvcc). Run it after editing device/kernels/*.cu; needs
# nvcc (setup-cuda-toolkit).
ptx:
	bash device/kernels/gen.sh

vet:
	$(GO) vet $(PKGS)

fmt:
	@test -z "$$(gofmt -l .)" || (gofmt -l .; echo "gofmt: files above need formatting"; exit 1)

test: fmt vet build
	$(GO) test $(TESTFLAGS) $(PKGS)

# The main job on the embedded default: a small ADMPO-ON run on hopper,
# exported, roll-outs benchmarked, the deployed policy evaluated.
quick: build
	./$(BIN) pipeline --env hopper

demo: build
	./$(BIN) envs list
	./$(BIN) envs run --env hopper --episodes 3 --seed 1

bench: build
	./$(BIN) bench train
	./$(BIN) bench rollout
	./$(BIN) bench serve

clean:
	rm -rf bin
