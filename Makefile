# Makefile - the two commands a new user needs: `make run` (the main job) and `make test`
.PHONY: deps configure build run test test-sanitize bench clean

JOBS ?= $(shell nproc)

deps:
	./scripts/install-deps.sh

configure: deps
	cmake --preset default

build: configure
	cmake --build --preset default -j $(JOBS)

# The main job: the examples (each checked against its reference), the quick benchmark table,
# then kdsl-run on a synthetic model it writes (random weights) and, when ../shared/models is
# present, on a trained 260K model.
run: build
	./scripts/run-main.sh

test: build
	ctest --preset default -j $(JOBS)

# The suite under AddressSanitizer + UndefinedBehaviorSanitizer (build-sanitize/); run it before
# landing a change to parsing, the cache or the runtime.
test-sanitize: deps
	cmake --preset sanitize
	cmake --build --preset sanitize -j $(JOBS)
	ctest --preset sanitize -j $(JOBS)

bench: build
	./build/src/tools/kdsl-bench

clean:
	rm -rf build build-sanitize
