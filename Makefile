# wf — run `make help` for the targets.
SHELL := /bin/bash
GO ?= go
# staticcheck is pinned: a new release may bring new checks, taken deliberately.
STATICCHECK_VERSION ?= v0.7.0
GO_TEST_FLAGS ?= -count=1 -timeout 25m
ARGS ?=

.DEFAULT_GOAL := help

.PHONY: help
help: ## show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
# Static, as deploy/build.sh builds the images' binary (CGO_ENABLED=0): the
# binary `make run` and `make bench` run is the one that ships. A cgo build
# also maps the C library and runs its initialisation, ~5 MiB more resident
# memory in an idle wf run (BENCHMARKS.md), for nothing wf uses.
build: export CGO_ENABLED = 0
build: ## build the static wf binary into bin/wf, as the images do (stamped with the commit of a git checkout: wf --version)
	@[ -x bin/wf ] || echo "compiling wf into bin/wf: the first build takes a few minutes (Go compiles every dependency once), later ones seconds"
	$(GO) build -buildvcs=auto -o bin/wf .

.PHONY: run
run: postgres build ## run `wf run` on a local PostgreSQL of its own (data in ./.wf); ARGS="..." adds flags
	./bin/wf run $(ARGS)

.PHONY: test
# make test compiles everything as deploy/build.sh does (no cgo, -trimpath), so
# check-deploy's static binary reuses the compiled packages instead of building
# the whole tree a second time (that doubled CI's compile time).
test: export CGO_ENABLED = 0
test: export GOFLAGS = -trimpath
test: export WF_TEST_REQUIRE_PYTHON = 1
test: postgres chromium datefudge python ## run every test against one throwaway PostgreSQL, the dashboard's in headless Chromium (installs what is missing)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@mkdir -p bin/test-output
	$(GO) run ./internal/dbtest/withdb -- $(GO) test $(GO_TEST_FLAGS) -artifacts -outputdir $(CURDIR)/bin/test-output ./...
	$(GO) build -buildvcs=auto -o bin/wf . && ./bin/wf validate specs/
	$(MAKE) --no-print-directory test-dates-sweep
	$(MAKE) --no-print-directory check-deploy
	$(MAKE) --no-print-directory embed-check
	$(MAKE) --no-print-directory test-riverbench
	$(MAKE) --no-print-directory test-race-core

# The race detector needs cgo (a C compiler); the packages where goroutines
# share state run under it in make test, the whole tree in make test-race.
RACE_PACKAGES ?= ./engine/dispatch/ ./engine/worker/ ./engine/events/ ./engine/leader/ ./engine/clock/ ./engine/workflow/

# The contracts make test runs against the in-process fakes and test-live
# against the real services (docs/live-tests.md): the tests, and the
# packages that hold them. Only their "live" subtests run here.
LIVE_TESTS ?= TestProvision|TestStorageUploadEndToEnd|TestCloudCleanupAfterDrop|TestSuite|TestRoundTripKeepsOrderAndBytes|TestIndexFullThenIncremental|TestIndexDeletesClosedFeatures|TestDropAndTenancy|TestBigQueryIntegerKeyGeoJSON|TestExecutionsWithoutWorker
LIVE_PACKAGES ?= ./catalog/gcp/ ./api/ ./reporters/gcsreporter/ ./catalog/search/ ./catalog/warehouse/ ./runners/cloudrun/

.PHONY: test-live
test-live: export CGO_ENABLED = 0
test-live: export GOFLAGS = -trimpath
test-live: export WF_LIVE = 1
test-live: postgres ## run the cloud contracts against real Google Cloud and Elasticsearch (WF_LIVE_* settings, docs/live-tests.md); each is skipped, naming what is missing, without them
	$(GO) run ./internal/dbtest/withdb -- $(GO) test -count=1 -timeout 60m -v -run '^($(LIVE_TESTS))$$/^live$$' $(LIVE_PACKAGES)

.PHONY: test-race-core
test-race-core: export CGO_ENABLED = 1
test-race-core: postgres cc ## run the engine's concurrent packages (dispatch, worker, events, leader…) under the race detector
	$(GO) run ./internal/dbtest/withdb -- $(GO) test -race $(GO_TEST_FLAGS) $(RACE_PACKAGES)

.PHONY: cc
cc: ## install a C compiler when missing (gcc; apt-get, as root): the race detector needs cgo
	@command -v gcc >/dev/null 2>&1 && exit 0; \
	if [ "$$(id -u)" != 0 ]; then echo "the race detector needs a C compiler: run 'sudo apt-get install -y gcc libc6-dev'"; exit 1; fi; \
	echo "installing gcc (apt-get install)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null

.PHONY: test-riverbench
test-riverbench: postgres ## vet the River comparison's module (cli/bench/riverbench) and run it small against a throwaway PostgreSQL
	cd cli/bench/riverbench && $(GO) vet ./... && $(GO) test $(GO_TEST_FLAGS) ./...

.PHONY: embed-check
embed-check: postgres ## build a throwaway module outside the repository that embeds wf (replace to this checkout) and run it
	$(GO) run ./internal/dbtest/withdb -- .ci/embed-check

.PHONY: check-deploy
check-deploy: ## build the image's static binary with deploy/build.sh, check it is static, check the manifests
	deploy/build.sh bin/wf-static && deploy/check-static.sh bin/wf-static
	$(GO) test -count=1 ./deploy/

.PHONY: conformance
# make test runs 300 requests with seed 35; this runs more, with a new seed
# each time unless WF_CONFORMANCE_SEED is set (a failure prints the seed).
conformance: export CGO_ENABLED = 0
conformance: export GOFLAGS = -trimpath
conformance: postgres ## run the API conformance test long: WF_CONFORMANCE_REQUESTS (default 5000) requests generated from schemas/openapi.json
	@seed=$${WF_CONFORMANCE_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; echo "conformance: seed $$seed (WF_CONFORMANCE_SEED=$$seed reproduces it)"; \
	WF_CONFORMANCE_SEED=$$seed WF_CONFORMANCE_REQUESTS=$${WF_CONFORMANCE_REQUESTS:-5000} \
	$(GO) run ./internal/dbtest/withdb -- $(GO) test -count=1 -timeout 30m -run 'TestConformance$$' ./api/

.PHONY: test-race
test-race: export CGO_ENABLED = 1
test-race: postgres cc ## run every test with the race detector
	$(GO) run ./internal/dbtest/withdb -- $(GO) test -race $(GO_TEST_FLAGS) ./...

.PHONY: bench
bench: postgres build ## run the standard benchmarks (ingestion beside ogr2ogr included) and wf beside River on a durable local PostgreSQL (~11 min) and rewrite BENCHMARKS.md
	./bin/wf --log-level warn bench suite --markdown BENCHMARKS.md --json-out bin/bench.json $(ARGS)
	$(MAKE) --no-print-directory bench-river

# The comparison with River is a module of its own (cli/bench/riverbench), so
# River never enters wf's go.mod; RIVER_ARGS="--rounds 3" takes medians of three.
RIVER_ARGS ?=

.PHONY: bench-river
bench-river: postgres ## burn-down and bulk enqueue of wf beside River v0.51.2 on one durable local PostgreSQL (~4 min); rewrites its part of BENCHMARKS.md
	@mkdir -p bin
	cd cli/bench/riverbench && $(GO) run . --markdown $(CURDIR)/BENCHMARKS.md --json-out $(CURDIR)/bin/bench-river.json $(RIVER_ARGS)

.PHONY: bench-go
bench-go: postgres ## run the Go benchmarks of the hot paths (claim, completion, heartbeat, specs, expressions)
	$(GO) run ./internal/dbtest/withdb -- $(GO) test -run '^$$' -bench . -benchtime 2s ./engine/store/ ./engine/spec/

.PHONY: lint
lint: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	cd cli/bench/riverbench && $(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# The dates test-dates runs at: the first and the last second of a month,
# 31 December -> 1 January and 29 February (UTC); the two DST change days of
# Europe/Rome (TZ=Europe/Rome); the first second of a month in UTC+14.
TEST_DATES_UTC ?= 2027-03-01T00:00:00Z 2027-04-30T23:59:59Z 2026-12-31T23:59:50Z 2028-02-29T00:00:00Z
TEST_DATES_ROME ?= 2027-03-28T01:59:50+01:00 2027-10-31T02:59:50+02:00
TEST_DATES_FAR ?= 2027-03-01T00:00:00+14:00
# The packages whose code or fixtures read the date: the engine, the API, the
# reporters and the catalog (partitions, schedules, retention, leases, report
# paths, features' validity and transaction times). ./cli/... reads it too,
# through the same code in wf processes; it is left out for time (add it with
# DATE_PACKAGES=... when changing the CLI's dates).
DATE_PACKAGES ?= ./engine/... ./api/... ./reporters/... ./catalog/...
# Flags for internal/dbtest/testdates, e.g. TEST_DATES_FLAGS="-run TestClaim -tolerance 10s".
TEST_DATES_FLAGS ?=

.PHONY: test-dates
# Compiled as make test compiles, so the two share the build cache.
test-dates: export CGO_ENABLED = 0
test-dates: export GOFLAGS = -trimpath
test-dates: postgres datefudge ## run the date-sensitive packages as if it were other dates, each package starting at the date (7 dates of DATE_PACKAGES)
	$(GO) run ./internal/dbtest/testdates $(TEST_DATES_FLAGS) \
	    $(foreach d,$(TEST_DATES_UTC),$(d)@UTC) \
	    $(foreach d,$(TEST_DATES_ROME),$(d)@Europe/Rome) \
	    $(foreach d,$(TEST_DATES_FAR),$(d)@Pacific/Kiritimati) \
	    -- $(DATE_PACKAGES)

# The date sweep of make test: the tests that write rows at times they
# compute (found by what they call: internal/dbtest/testdates/dated.go) at
# hostile dates: the 1st (and New Year), 2nd, 7th and 10th, the 28th to the
# 31st of several months, 29 February, both DST changes of Europe/Rome and
# America/New_York, and the 1st in UTC+14. A date's packages run side by
# side, SWEEP_JOBS dates at once.
TEST_SWEEP_DATES ?= 2027-01-01T00:00:00Z@UTC 2027-03-02T00:00:00Z@UTC 2027-03-07T12:00:00Z@UTC \
    2027-05-10T00:00:00Z@UTC 2027-02-28T23:59:50Z@UTC 2028-02-29T23:59:50Z@UTC \
    2027-04-30T23:59:50Z@UTC 2026-12-31T23:59:50Z@UTC \
    2027-03-28T01:59:50+01:00@Europe/Rome 2027-10-31T02:59:50+02:00@Europe/Rome \
    2027-03-14T01:59:50-05:00@America/New_York 2027-11-07T01:59:50-04:00@America/New_York \
    2027-03-01T00:00:00+14:00@Pacific/Kiritimati
SWEEP_JOBS ?= 3

.PHONY: test-dates-sweep
test-dates-sweep: export CGO_ENABLED = 0
test-dates-sweep: export GOFLAGS = -trimpath
test-dates-sweep: postgres datefudge ## run the tests that write dated rows at 13 hostile dates (part of make test; a few minutes)
	$(GO) run ./internal/dbtest/testdates -dated -jobs $(SWEEP_JOBS) $(TEST_SWEEP_DATES) -- ./...

.PHONY: datefudge
datefudge: ## install Debian's datefudge when missing: test-dates runs PostgreSQL under it
	@if ls /usr/lib/*/datefudge/datefudge.so >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then echo "datefudge is missing: run 'sudo apt-get install -y datefudge'"; exit 1; fi; \
	echo "installing datefudge (apt-get install)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get update -qq && apt-get install -y -qq --no-install-recommends datefudge >/dev/null

.PHONY: postgres
postgres: ## install PostgreSQL, PgBouncer, the PostGIS of the server's major version, GDAL, and curl and jq (the walk-throughs') when missing (apt-get, as root)
	@missing=; \
	if [ -z "$$WF_TEST_DATABASE_URL$$WF_DATABASE_URL" ] && ! command -v initdb >/dev/null 2>&1 \
	    && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then missing=postgresql; fi; \
	if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then missing="$$missing pgbouncer"; fi; \
	if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" != 0 ]; then \
	        echo "missing:$$missing: run 'sudo apt-get install -y$$missing' (or set WF_TEST_DATABASE_URL for PostgreSQL)"; exit 1; \
	    fi; \
	    echo "installing$$missing (apt-get install)"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; \
	fi; \
	missing=; \
	for bin in /usr/lib/postgresql/*/bin/initdb; do \
	    [ -e "$$bin" ] || continue; major=$$(basename $$(dirname $$(dirname $$bin))); \
	    [ -e /usr/share/postgresql/$$major/extension/postgis.control ] || missing="$$missing postgresql-$$major-postgis-3"; \
	done; \
	command -v ogr2ogr >/dev/null 2>&1 || missing="$$missing gdal-bin"; \
	command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	command -v jq >/dev/null 2>&1 || missing="$$missing jq"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
	    echo "the catalog needs PostGIS and GDAL, the walk-throughs curl and jq: run 'sudo apt-get install -y$$missing'"; exit 1; \
	fi; \
	echo "installing$$missing (apt-get install)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null

.PHONY: python
python: ## install Debian's python3 with venv (and pip) when missing: the Python client is pip-installed offline into a fresh venv in make test
	@for p in python3 /usr/bin/python3; do \
	    $$p -c 'import venv, ensurepip' >/dev/null 2>&1 && exit 0; \
	done; \
	if [ "$$(id -u)" != 0 ]; then \
	    echo "python3 cannot make a virtual environment with pip: run 'sudo apt-get install -y python3 python3-venv'"; exit 1; \
	fi; \
	echo "installing python3 with venv (apt-get install)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get update -qq && apt-get install -y -qq --no-install-recommends python3 python3-venv >/dev/null

.PHONY: chromium
chromium: ## install Debian's chromium (for the dashboard's browser tests) when it is missing (apt-get, as root)
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
	    echo "Chromium is missing: run 'sudo apt-get install -y chromium'"; exit 1; \
	fi; \
	echo "installing Chromium (apt-get install chromium)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null

.PHONY: screenshot
screenshot: postgres chromium ## retake docs/dashboard-overview.png, the picture of the dashboard in docs/dashboard.md
	WF_DASHBOARD_SCREENSHOT=$(CURDIR)/docs/dashboard-overview.png $(GO) run ./internal/dbtest/withdb -- \
	    $(GO) test -count=1 -run '^TestDashboardInBrowser$$' ./cli/

.PHONY: clean
clean: ## remove build output (keeps ./.wf, the local database)
	rm -rf bin

.PHONY: vendor-ol
OL_VERSION ?= 10.11.0
vendor-ol: ## refresh the dashboard's OpenLayers (api/ui/static/ol.js, ol.css) from npm's ol@$(OL_VERSION)
	@tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent ol@$(OL_VERSION) >/dev/null && tar xzf ol-$(OL_VERSION).tgz && \
	sed '/^\/\/# sourceMappingURL=/d' package/dist/ol.js > $(CURDIR)/api/ui/static/ol.js && \
	cp package/ol.css $(CURDIR)/api/ui/static/ol.css && cp package/LICENSE.md $(CURDIR)/api/ui/static/ol.LICENSE.md && rm -rf $$tmp
