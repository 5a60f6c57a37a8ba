# One image for both roles of docker-compose.yml: `npm run api` and `npm run worker`.
FROM node:20-bookworm-slim

WORKDIR /app
# onnxruntime-node's postinstall downloads CUDA files; the service runs on CPU.
ENV ONNXRUNTIME_NODE_INSTALL=skip \
    NODE_ENV=production

# Dependencies first, so source edits do not invalidate the npm ci layer. tsx (the runtime) is a dependency.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# Source only, listed explicitly so a host node_modules or data dir never lands in the image.
COPY tsconfig.json *.ts ./
COPY api ./api
COPY activities ./activities
COPY config ./config
COPY connectors ./connectors
COPY pipeline ./pipeline
COPY runtime ./runtime
COPY store ./store
COPY worker ./worker
COPY workflows ./workflows

USER node
EXPOSE 8787
CMD ["npm", "run", "api"]
