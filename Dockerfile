# staysync: the sync daemon as a container service. Entrypoint: the CLI (default command: run).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json rolldown.config.mjs ./
COPY src ./src
# The production build only (tsconfig.build.json: src/): the simulator, bench and demo are tools
# for development (tools/, `npm run build:tools`) and do not ship. .dockerignore keeps them out
# of the context too, so a production module that imported one fails here.
# --omit=optional drops the local server: embedded-postgres (published as betas only) and its
# PostgreSQL binaries (@embedded-postgres/<platform>, about 60 MB). Inside a container that server
# would answer on the container's own 127.0.0.1, out of reach of reporting tools, so the image
# needs DATABASE_URL and says so if it is missing.
# The build bundles the entry point (rolldown.config.mjs): one file to read at each start.
RUN npm run build && npm prune --omit=dev --omit=optional --no-audit --no-fund

FROM node:24-bookworm-slim
# Memory: the daemon's live heap is bounded by a page (about 25 MB); without limits V8 sizes
# its heap for the machine and the process grows past 300 MB. With these it stays under 150 MB.
# glibc keeps freed memory in its arenas unless told to give it back: the two MALLOC_ settings
# return large and trailing free blocks to the system (measured by `npm run bench`, scenario B).
ENV NODE_ENV=production \
    NODE_OPTIONS="--max-old-space-size=128 --max-semi-space-size=4" \
    MALLOC_MMAP_THRESHOLD_=131072 \
    MALLOC_TRIM_THRESHOLD_=131072
WORKDIR /app
# What the daemon runs, and nothing else: never the whole of config/, where config/deploy/
# holds the operator's API connections (client secrets) and the .env of compose's passwords
# (.dockerignore leaves them out of the build context too; test/unit/build-context.test.ts).
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY config/default.json ./config/default.json
COPY migrations ./migrations
# One command name everywhere: `docker exec <container> staysync status`, as the docs write it.
# A symlink to the entry point (its shebang is `#!/usr/bin/env node`); chmod so that it runs
# whatever mode the build left it with.
RUN chmod 0755 /app/dist/cli/main.js && ln -s /app/dist/cli/main.js /usr/local/bin/staysync
USER node
# 9464: the ops port (/healthz, /readyz, /metrics), for the cluster and its monitoring only.
# 9465: the webhook receiver (STAYSYNC_WEBHOOKS_ENABLED=true), the one port for the provider.
EXPOSE 9464 9465
# On the ops port: a flood of webhook requests cannot make the container unhealthy.
HEALTHCHECK --interval=30s --timeout=5s CMD node -e "fetch('http://127.0.0.1:9464/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# The same program as `staysync` on the PATH; `docker run <image> status` runs `staysync status`.
ENTRYPOINT ["staysync"]
CMD ["run"]
