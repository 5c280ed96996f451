# Source Registry — `make` lists the targets. Targets that talk to the database read
# DATABASE_URL (and the rest of the configuration) from the environment or from .env.
SHELL := /bin/bash
.DEFAULT_GOAL := help

ifneq (,$(wildcard .env))
include .env
export
endif

.PHONY: help install build migrate start run test typecheck lint check account account-list db-up db-down bench clean

help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}'

install: ## Install dependencies (npm ci) and build
	npm ci

build: ## Compile TypeScript to dist/
	npm run build

migrate: build ## Apply pending sql/ migrations to DATABASE_URL (idempotent)
	node dist/cli.js migrate

start: build ## Start the service (reads .env)
	npm start --silent

run: start ## Same as start

test: ## Run the test suite (starts a throwaway PostGIS unless TEST_DATABASE_URL is set)
	npm test

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

db-up: ## Start PostGIS with docker compose (needs a Docker engine)
	docker compose up -d --wait db

db-down: ## Stop the docker compose services
	docker compose down

bench: build ## Benchmarks: service vs naive handler vs pgbench (throwaway PostGIS); writes bench/RESULTS.md
	node bench/run.mjs

clean: ## Remove build output
	rm -rf dist coverage .tap
