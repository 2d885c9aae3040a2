# ovserve: gRPC on 50051 and the OpenAI-compatible REST bridge on 8000, serving
# the bundled tiny-chat models (mount a model directory and pass --model to
# serve your own: docker run -v /models:/models IMAGE ovserve serve --model qwen=/models/qwen ...).
# To serve Hugging Face checkpoints, repository ids or GGUF files, build with the
# converter (docker build --build-arg EXTRAS='[convert]' .) and keep conversions and
# downloads in a volume: -v ovserve-cache:/home/ovserve/.cache.
FROM python:3.11-slim
ARG EXTRAS=""

# No bytecode files, unbuffered logs (docker logs shows model loading as it happens).
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1

WORKDIR /app
COPY pyproject.toml setup.py README.md LICENSE ./
COPY service ./service
COPY rest_bridge ./rest_bridge
COPY clients ./clients
RUN pip install --no-cache-dir ./clients ".${EXTRAS}" \
    && useradd --create-home --uid 10001 ovserve
USER ovserve

EXPOSE 50051 8000
# grpc.health.v1: NOT_SERVING while the models load and while draining on SIGTERM.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s CMD ["ovserve", "health", "--target", "127.0.0.1:50051"]
# Listen on every interface inside the container; the default is loopback only.
CMD ["ovserve", "serve", "--host", "0.0.0.0", "--rest-host", "0.0.0.0"]
