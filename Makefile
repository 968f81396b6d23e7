# Makefile - the two commands a new user needs: `make run` (the main job) and `make test`
.PHONY: deps configure build run test bench clean

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

bench: build
	./build/src/tools/kdsl-bench

clean:
	rm -rf build
