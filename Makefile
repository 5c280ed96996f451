# Source Registry — `make` lists the targets. Targets that talk to the database read
# DATABASE_URL (and the rest of the configuration) from the environment or from .env.
SHELL := /bin/bash
.DEFAULT_GOAL := help

ifneq (,$(wildcard .env))
include .env
export
endif

.PHONY: help install build migrate start run test test-server compose-check typecheck lint check account account-list db-up db-down bench clean

help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}'

install: ## Install dependencies (npm ci) and build
	npm ci

build: ## Compile TypeScript to dist/
	npm run build

migrate: build ## Apply pending sql/ migrations to DATABASE_URL (idempotent)
	node dist/cli.js migrate

# node itself, not npm start: a supervisor's SIGTERM then reaches the service (npm would be left
# to forward it). The flags are npm start's (docs/operations.md, "Running it").
start: build ## Start the service (reads .env); SIGTERM drains and exits
	exec node --max-semi-space-size=8 --heap-growing-percent=20 dist/main.cjs

run: start ## Same as start

test: ## Run the test suite on the embedded PostGIS (npm test; nothing to install)
	npm test

test-server: ## Run the test suite on a throwaway PostGIS server cluster (or TEST_DATABASE_URL)
	npm run test:server

typecheck: ## Type-check src, test and bench
	npm run typecheck

lint: ## Lint
	npm run lint

check: typecheck lint test ## Typecheck, lint and test, as CI does

account: build ## Create an account: make account EMAIL=… ORG=… ROLE=admin|editor|viewer (prompts for the password)
	@test -n "$(EMAIL)" -a -n "$(ORG)" -a -n "$(ROLE)" || { echo "usage: make account EMAIL=you@example.org ORG=acme ROLE=admin|editor|viewer"; exit 2; }
	@read -rsp "Password for $(EMAIL) (12+ characters): " pw && echo && \
	  printf '%s' "$$pw" | node dist/cli.js account add --email "$(EMAIL)" --org "$(ORG)" --role "$(ROLE)" --password-stdin

account-list: build ## List accounts
	node dist/cli.js account list

compose-check: ## Validate docker-compose.yml as Compose reads it (docker-compose config; no engine needed)
	@test -f .env || { cp .env.example .env && sed -i "s|^JWT_SECRET=.*|JWT_SECRET=$$(head -c 48 /dev/urandom | base64 -w0)|" .env && trap 'rm -f .env' EXIT; }; \
	  docker-compose config -q && echo "docker-compose.yml: valid"

db-up: ## Start PostGIS with docker compose (needs a Docker engine)
	docker compose up -d --wait db

db-down: ## Stop the docker compose services
	docker compose down

bench: build ## Benchmarks: service vs naive handler vs pgbench (throwaway PostGIS); writes bench/RESULTS.md
	node bench/run.mjs

clean: ## Remove build output
	rm -rf dist coverage .tap
