# Stint: make help lists the targets.
GO        ?= go
BIN       ?= bin
GUESTS    := hello primes stuck sleeper reader memhog flood flaky
PLUGINS   := kvplugin extism-greet extism-kv
WASM_OUT  := wasm-examples/build
# One compilation cache and guest build cache for every test package.
export STINT_TEST_CACHE ?= $(CURDIR)/.cache/test

.PHONY: help build wasm demo test test-short fuzz bench bench-report bench-peers bench-queues lint fixtures clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/runner
	CGO_ENABLED=0 $(GO) build -o $(BIN)/runner ./cmd/runner

wasm: ## build the example Go guests and plugins into wasm-examples/build/
	@mkdir -p $(WASM_OUT)
	@for g in $(GUESTS); do \
		GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -o $(WASM_OUT)/$$g.wasm ./wasm-examples/$$g || exit 1; \
	done
	@for g in $(PLUGINS); do \
		GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -buildmode=c-shared -o $(WASM_OUT)/$$g.wasm ./wasm-examples/$$g || exit 1; \
	done
	@echo "built $(GUESTS) and the plugins $(PLUGINS) into $(WASM_OUT)/"

demo: build wasm ## run an example task end to end: hello, then primes queued on SQLite
	@echo '$$ echo "hello, stint" | bin/runner run wasm-examples/build/hello.wasm --input -'
	@echo "hello, stint" | $(BIN)/runner run $(WASM_OUT)/hello.wasm --input - --log-level warn
	@echo '$$ bin/runner submit wasm-examples/build/primes.wasm --input - --wait  (with runner serve in the background)'
	@./scripts/demo.sh $(BIN)/runner $(WASM_OUT)

test: ## run every test with -race (what CI runs)
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 25m ./...

test-short: ## the tests without -race
	$(GO) test -count=1 ./...

# Each fuzz target runs for FUZZTIME; their seed corpora (testdata/fuzz)
# already run in `make test`.
FUZZTIME ?= 3m
FUZZ_TARGETS := ./sandbox/internal/rewrite:FuzzPrepare ./sandbox:FuzzStintABI ./sandbox:FuzzDecodeHTTPRequestMeta ./sandbox:FuzzDecodeSnapshot ./sandbox/internal/extismkernel:FuzzKernel ./server:FuzzDecodeSpec ./server:FuzzHandlers

# The stop checks' bound on random programs: BOUND_SEEDS more programs
# than `make test` runs, from a random first seed (a failure names it).
BOUND_SEEDS ?= 50000

fuzz: ## run every Go fuzz target for FUZZTIME each (default 3m), then the stop checks' bound on BOUND_SEEDS random programs
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -parallel 1 || exit 1; \
	done
	@seed0=$$(od -An -N4 -tu4 /dev/urandom | tr -d ' '); \
		echo "== TestBoundRandomPrograms (./sandbox, $(BOUND_SEEDS) programs from seed $$seed0)"; \
		STINT_BOUND_SEEDS=$(BOUND_SEEDS) STINT_BOUND_SEED0=$$seed0 $(GO) test ./sandbox -run '^TestBoundRandomPrograms$$' -count=1 -timeout 60m
	@seed0=$$(od -An -N4 -tu4 /dev/urandom | tr -d ' '); \
		echo "== TestResumeRandomPrograms (./sandbox, $(BOUND_SEEDS) programs suspended and resumed, from seed $$seed0)"; \
		STINT_RESUME_SEEDS=$(BOUND_SEEDS) STINT_RESUME_SEED0=$$seed0 $(GO) test ./sandbox -run '^TestResumeRandomPrograms$$' -count=1 -timeout 60m

bench: build wasm ## Stint's own benchmarks (a few minutes); numbers go to docs/benchmarks.md
	$(GO) run ./internal/bench/cmd/stintbench -out bench/results

# QUICK=1: a smoke run (a few minutes, few samples) that writes a copy of the page
# (bench/results/report/benchmarks.md), not docs/benchmarks.md.
QUICK ?=
# QUEUES=1: also the PostgreSQL queue benchmark (block queues, ~6 min; needs STINT_TEST_POSTGRES).
QUEUES ?=
bench-report: build wasm ## every published number: Stint's benchmarks, the peers and plugin calls into docs/benchmarks.md (~10-15 min; QUICK=1: smoke run, writes a copy; QUEUES=1: also PostgreSQL against River, ~6 min, needs STINT_TEST_POSTGRES)
	$(GO) run ./internal/bench/cmd/benchreport $(if $(QUICK),-quick) $(if $(QUEUES),-queues)

bench-peers: build wasm ## benchmarks against bare wazero, Extism, wasmtime-go, Python and Node
	cd bench/peers && $(GO) run . -out ../results

bench-queues: build ## Stint on PostgreSQL against River, same server, one run (needs STINT_TEST_POSTGRES; ~6 min)
	cd bench/peers && $(GO) run ./queues -runner ../../$(BIN)/runner -out ../results

STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: ## gofmt, go vet and staticcheck (fetched by go run on first use)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	cd bench/peers && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...

fixtures: ## rebuild the .wasm fixtures from their .wat sources (needs wat2wasm)
	./internal/testwasm/wat/build.sh
	./internal/bench/testdata/build.sh
	cd examples/plugin-host && wat2wasm --debug-names plugin.wat -o plugin.wasm
	cd sandbox/internal/resume/testdata && wat2wasm --debug-names mix.wat -o mix.wasm

clean: ## remove build outputs and caches
	rm -rf $(BIN) $(WASM_OUT) .cache
