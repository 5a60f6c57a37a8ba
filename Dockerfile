# One image for both roles of docker-compose.yml: `npm run api` and `npm run worker`.
FROM node:20-bookworm-slim

WORKDIR /app
# onnxruntime-node's postinstall downloads CUDA files; the service runs on CPU.
ENV ONNXRUNTIME_NODE_INSTALL=skip \
    NODE_ENV=production

# Dependencies first, so source edits do not invalidate the npm ci layer. tsx (the runtime) is a dependency.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# Source (.dockerignore keeps node_modules, data and tests out).
COPY . .

USER node
EXPOSE 8787
CMD ["npm", "run", "api"]
