// Rendering of the Llama 3, ChatML (Qwen), Llama 2 and Gemma chat formats.
#include "chat_template.h"

#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "errors.h"

namespace kiln::serve {
namespace {

bool has(const std::string &s, const char *needle) { return s.find(needle) != std::string::npos; }

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// A token field of tokenizer_config.json: a string, or an AddedToken object {"content": ...}.
std::string tokenField(const nlohmann::json &cfg, const char *key) {
  if (!cfg.contains(key))
    return "";
  const auto &v = cfg[key];
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  return "";
}

// ChatML templates (Qwen 2/2.5) write a default system turn when the messages have none: the
// literal text between "<|im_start|>system\n" and "<|im_end|>" in the template, when it is plain
// text (Qwen 3's templates have none; its system turn is the caller's).
std::string chatmlDefaultSystem(const std::string &jinja) {
  for (const char *open : {"<|im_start|>system\\n", "<|im_start|>system\n"}) {
    size_t p = jinja.find(open);
    while (p != std::string::npos) {
      size_t start = p + std::string(open).size();
      size_t end = jinja.find("<|im_end|>", start);
      if (end == std::string::npos)
        break;
      std::string text = jinja.substr(start, end - start);
      if (!text.empty() && !has(text, "{") && !has(text, "'") && !has(text, "\"") && !has(text, "+"))
        return text;
      p = jinja.find(open, end);
    }
  }
  return "";
}

void checkRole(const ChatMessage &m, size_t i, std::initializer_list<const char *> roles) {
  for (const char *r : roles)
    if (m.role == r)
      return;
  throw badRequest("messages[" + std::to_string(i) + "].role",
                   "messages[" + std::to_string(i) + "].role: '" + m.role + "' is not a role this model's chat format has");
}

} // namespace

const char *chatFormName(ChatForm form) {
  switch (form) {
  case ChatForm::Llama3: return "llama3";
  case ChatForm::ChatML: return "chatml";
  case ChatForm::Llama2: return "llama2";
  case ChatForm::Gemma: return "gemma";
  default: return "none";
  }
}

ChatForm recognizeChatTemplate(const std::string &j) {
  if (has(j, "<|start_header_id|>") && has(j, "<|eot_id|>"))
    return ChatForm::Llama3;
  if (has(j, "<|im_start|>") && has(j, "<|im_end|>"))
    return ChatForm::ChatML;
  if (has(j, "<start_of_turn>") && has(j, "<end_of_turn>"))
    return ChatForm::Gemma;
  // Llama 2's, with its <<SYS>> block. Mistral's [INST] templates differ in spacing and system
  // handling, so they are not taken for Llama 2's (they are refused as unknown).
  if (has(j, "[INST]") && has(j, "[/INST]") && has(j, "<<SYS>>"))
    return ChatForm::Llama2;
  return ChatForm::None;
}

ChatTemplate loadChatTemplate(const std::string &configPath, const std::string &forced) {
  ChatTemplate t;
  nlohmann::json cfg = nlohmann::json::object();
  std::string jinja;
  if (!configPath.empty()) {
    std::ifstream in(configPath);
    if (!in)
      throw std::runtime_error("cannot read tokenizer config " + configPath);
    try {
      cfg = nlohmann::json::parse(in);
    } catch (const std::exception &e) {
      throw std::runtime_error("tokenizer config " + configPath + ": " + e.what());
    }
    t.bos = tokenField(cfg, "bos_token");
    t.eos = tokenField(cfg, "eos_token");
    if (cfg.contains("chat_template")) {
      const auto &ct = cfg["chat_template"];
      if (ct.is_string())
        jinja = ct.get<std::string>();
      else if (ct.is_array()) // named templates: [{"name": "default", "template": ...}, ...]
        for (const auto &e : ct)
          if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
            jinja = e["template"].get<std::string>();
    }
  }
  if (!forced.empty()) {
    for (ChatForm f : {ChatForm::Llama3, ChatForm::ChatML, ChatForm::Llama2, ChatForm::Gemma})
      if (forced == chatFormName(f))
        t.form = f;
    if (t.form == ChatForm::None)
      throw std::runtime_error("--chat-template: unknown form '" + forced + "' (llama3, chatml, llama2, gemma)");
  } else if (jinja.empty()) {
    t.problem = configPath.empty() ? "the model has no tokenizer config with a chat_template (give --tokenizer-config "
                                     "or --chat-template, or use /v1/completions)"
                                   : "the tokenizer config " + configPath + " has no chat_template";
    return t;
  } else {
    t.form = recognizeChatTemplate(jinja);
    if (t.form == ChatForm::None) {
      t.problem = "the model's chat_template is not one kiln-serve recognizes (Llama 3, ChatML/Qwen, Llama 2, "
                  "Gemma); give --chat-template FORM or use /v1/completions with the prompt rendered";
      return t;
    }
  }
  // Templates that write the BOS themselves use {{ bos_token }}; the forms all begin with it
  // except ChatML. A forced form without a config writes the markers only.
  if (t.form == ChatForm::ChatML)
    t.defaultSystem = chatmlDefaultSystem(jinja);
  else if (!jinja.empty() && !has(jinja, "bos_token"))
    t.bos.clear();
  return t;
}

std::string renderChat(const ChatTemplate &t, const std::vector<ChatMessage> &messages) {
  if (t.form == ChatForm::None)
    throw HttpError(400, "bad_request", t.problem, "messages");
  if (messages.empty())
    throw badRequest("messages", "messages: at least one message is needed");
  std::string out;
  switch (t.form) {
  case ChatForm::Llama3:
    out = t.bos;
    for (size_t i = 0; i < messages.size(); ++i) {
      checkRole(messages[i], i, {"system", "user", "assistant", "tool", "ipython"});
      out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" + trim(messages[i].content) + "<|eot_id|>";
    }
    out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    break;
  case ChatForm::ChatML:
    if (messages[0].role != "system" && !t.defaultSystem.empty())
      out += "<|im_start|>system\n" + t.defaultSystem + "<|im_end|>\n";
    for (size_t i = 0; i < messages.size(); ++i) {
      checkRole(messages[i], i, {"system", "user", "assistant", "tool"});
      out += "<|im_start|>" + messages[i].role + "\n" + messages[i].content + "<|im_end|>\n";
    }
    out += "<|im_start|>assistant\n";
    break;
  case ChatForm::Gemma: {
    // Gemma has no system role: its templates prepend the system text to the first user turn.
    out = t.bos;
    std::string system;
    size_t first = 0;
    if (messages[0].role == "system")
      system = trim(messages[0].content) + "\n\n", first = 1;
    for (size_t i = first; i < messages.size(); ++i) {
      checkRole(messages[i], i, {"user", "assistant"});
      std::string role = messages[i].role == "assistant" ? "model" : "user";
      out += "<start_of_turn>" + role + "\n" + (i == first ? system : "") + trim(messages[i].content) + "<end_of_turn>\n";
    }
    out += "<start_of_turn>model\n";
    break;
  }
  case ChatForm::Llama2: {
    // [INST] turns alternate user/assistant; a system message goes inside the first one.
    std::string system;
    size_t first = 0;
    if (messages[0].role == "system")
      system = "<<SYS>>\n" + trim(messages[0].content) + "\n<</SYS>>\n\n", first = 1;
    for (size_t i = first; i < messages.size(); ++i) {
      bool userTurn = (i - first) % 2 == 0;
      checkRole(messages[i], i, {userTurn ? "user" : "assistant"});
      if (userTurn)
        out += t.bos + "[INST] " + (i == first ? system : "") + trim(messages[i].content) + " [/INST]";
      else
        out += " " + trim(messages[i].content) + " " + t.eos;
    }
    if (messages.back().role != "user")
      throw badRequest("messages", "messages: the Llama 2 chat format needs the last message to be the user's");
    break;
  }
  default:
    break;
  }
  return out;
}

} // namespace kiln::serve
