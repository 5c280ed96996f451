# Source Registry image: build with dev dependencies, run with production ones only.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN npm ci --ignore-scripts
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY sql ./sql
# The map page's HTML, CSS and script (dist/map/map.routes.js serves them from here).
COPY src/map/public ./src/map/public
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s CMD ["node", "-e", "fetch('http://127.0.0.1:3000/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The command of `npm start` (package.json): young-generation semi-spaces of 8 MB, the old
# generation grown by 20 % at a time, and dist/main.cjs sizing libuv's threadpool to the cores
# keep the service under 256 MB under load; see docs/operations.md and docs/performance.md.
CMD ["node", "--max-semi-space-size=8", "--heap-growing-percent=20", "dist/main.cjs"]
