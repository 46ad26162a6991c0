# One image for every Switchboard service: an agent server (`switchboard serve MODULE:ATTR`) or the
# gateway (`switchboard gateway --config FILE`). compose.yaml runs the demo's support desk with it;
# docs/deploy.md says how to run your own agents, tokens, binding, stores and scaling.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY agent_server ./agent_server
COPY gateway ./gateway
RUN pip install . && useradd --system --home-dir /app switchboard && mkdir /data && chown switchboard /data
# The demo's agents and the deployment's gateway configuration; your own agents go here too.
COPY examples ./examples
COPY deploy ./deploy

USER switchboard
ENV SWITCHBOARD_DATA_DIR=/data
EXPOSE 8080
ENTRYPOINT ["switchboard"]
CMD ["gateway", "--config", "deploy/gateway.toml"]
