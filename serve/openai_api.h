// OpenAI-compatible routes: POST /v1/completions, POST /v1/chat/completions (JSON and SSE
// streams), GET /v1/models.
#pragma once

namespace kiln::serve {
class HttpServer;
struct ServerState;
void registerOpenAiRoutes(HttpServer &server, ServerState &state);
} // namespace kiln::serve
