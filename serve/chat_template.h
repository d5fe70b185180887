// Chat prompts: renders messages in one of the common chat formats, chosen by recognizing the
// Jinja chat_template of the model's tokenizer_config.json (kiln has no Jinja interpreter; the
// templates of a family differ in details, but their output for plain messages is one of these).
#pragma once
#include <string>
#include <vector>

namespace kiln::serve {

enum class ChatForm { None, Llama3, ChatML, Llama2, Gemma };

struct ChatTemplate {
  ChatForm form = ChatForm::None;
  std::string bos;           // the config's bos_token, written where the template writes it
  std::string eos;           // eos_token (Llama 2 ends an assistant turn with it)
  std::string defaultSystem; // ChatML templates that add a system turn when none is given
  std::string problem;       // why chat is unavailable (form None)
};

struct ChatMessage {
  std::string role; // system, user, assistant
  std::string content;
};

const char *chatFormName(ChatForm form);

// Recognizes a template's form from its markers; None when it matches none of them.
ChatForm recognizeChatTemplate(const std::string &jinja);

// From tokenizer_config.json at `configPath` ("" = none) or a forced form name ("" = recognize).
// Throws std::runtime_error for an unreadable config or an unknown forced name; a config without
// a template or with an unrecognized one gives form None and a `problem` to report per request.
ChatTemplate loadChatTemplate(const std::string &configPath, const std::string &forced);

// The prompt text (special tokens written out, to be encoded with special-token parsing and
// without adding the BOS again). Throws kiln::serve::HttpError (400) for messages the form
// cannot express, naming the message.
std::string renderChat(const ChatTemplate &t, const std::vector<ChatMessage> &messages);

} // namespace kiln::serve
