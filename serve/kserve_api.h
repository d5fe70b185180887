// The Open Inference Protocol (KServe v2, REST/JSON) for forward models: model metadata,
// readiness and POST /v2/models/{name}/infer. The health routes live in http_server.cpp.
#pragma once

namespace kiln::serve {
class HttpServer;
struct ServerState;
void registerKServeRoutes(HttpServer &server, ServerState &state);
} // namespace kiln::serve
