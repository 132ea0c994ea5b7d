# One image for every role of mcp-tasks-temporal: front server, worker, and (dev profile) the Temporal dev server.
#   docker build -t mcp-tasks-temporal .
# Build your own app on top of it: `FROM mcp-tasks-temporal`, then `COPY` your package and point MCP_TASKS_APP at it.

ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH PIP_DISABLE_PIP_VERSION_CHECK=1
COPY pyproject.toml README.md ./
COPY src ./src
# The package's workflows/ and activities/ are symlinked from src/; the real folders must come along.
COPY workflows ./workflows
COPY activities ./activities
# The runtime extras only: no test tools, linters or tests in the image.
RUN pip install --no-cache-dir ".[otel]"

FROM ${PYTHON_IMAGE}
RUN useradd --system --uid 10001 --user-group --home-dir /app --create-home mcp \
    && mkdir /data && chown mcp:mcp /data
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1
WORKDIR /app
USER 10001:10001
# 8000: MCP (/mcp) and the probes (/healthz, /readyz); 9464: Prometheus /metrics when --metrics-port is set.
EXPOSE 8000 9464
ENTRYPOINT ["mcp-tasks-temporal"]
CMD ["--help"]
