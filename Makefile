# tenure: `make run` starts the server with its data in ./data;
# `make test` runs every test. Both need only Go: modules are fetched as needed.
GO       ?= go
FUZZTIME ?= 30s

.PHONY: build run test vet fuzz clean

build:
	$(GO) build -o bin/tenure ./cmd/tenure

run: build
	./bin/tenure --addr 127.0.0.1:6379 --dir ./data

# vet, then every test with the race detector; the fuzz targets run their
# seed corpora (testdata/fuzz) as ordinary tests.
test:
	$(GO) vet ./...
	$(GO) test -race -timeout 9m ./...

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) ./resp/
	$(GO) test -run '^$$' -fuzz '^FuzzDispatch$$' -fuzztime $(FUZZTIME) ./resp/

clean:
	rm -rf bin

# tenure against redis-server (Debian's redis-server package) on this
# machine: a table on stdout, results.json and chart.svg in bench/out/.
# Pass flags with BENCHFLAGS, e.g. make bench BENCHFLAGS='-duration 2s -rounds 1'.
.PHONY: bench
bench:
	$(GO) run ./bench $(BENCHFLAGS)
