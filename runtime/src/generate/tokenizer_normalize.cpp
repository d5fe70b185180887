// The normalizers (NFC, Prepend, Replace, Strip) and the literal-string split that SentencePiece-style
// tokenizer.json files use (Llama 2, Gemma), with Hugging Face tokenizers' semantics.
#include "generate/tokenizer_model.h"

#include <algorithm>

namespace kiln::tokenizer_model {

void splitLiteral(std::string_view text, std::string_view delimiter, SplitBehavior behavior,
                  std::vector<std::pair<size_t, size_t>> &pieces) {
  // Hugging Face first cuts the text into alternating (range, is_match) parts, then merges.
  struct Part {
    size_t begin, end;
    bool match;
  };
  std::vector<Part> parts;
  size_t pos = 0;
  if (!delimiter.empty()) {
    for (size_t at = text.find(delimiter); at != std::string_view::npos; at = text.find(delimiter, pos)) {
      if (at > pos)
        parts.push_back(Part{pos, at, false});
      parts.push_back(Part{at, at + delimiter.size(), true});
      pos = at + delimiter.size();
    }
  }
  if (pos < text.size())
    parts.push_back(Part{pos, text.size(), false});
  std::vector<Part> merged;
  switch (behavior) {
  case SplitBehavior::kIsolated:
    merged = parts;
    break;
  case SplitBehavior::kRemoved:
    for (const Part &p : parts)
      if (!p.match)
        merged.push_back(p);
    break;
  case SplitBehavior::kMergedWithPrevious: {
    bool previousMatch = false;
    for (const Part &p : parts) {
      if (p.match && !previousMatch && !merged.empty())
        merged.back().end = p.end;
      else
        merged.push_back(p);
      previousMatch = p.match;
    }
    break;
  }
  case SplitBehavior::kMergedWithNext: {
    bool nextMatch = false;
    for (size_t k = parts.size(); k-- > 0;) {
      const Part &p = parts[k];
      if (p.match && !nextMatch && !merged.empty())
        merged.back().begin = p.begin;
      else
        merged.push_back(p);
      nextMatch = p.match;
    }
    std::reverse(merged.begin(), merged.end());
    break;
  }
  }
  for (const Part &p : merged)
    if (p.end > p.begin)
      pieces.emplace_back(p.begin, p.end);
}

std::string replaceAll(std::string_view text, std::string_view pattern, std::string_view content) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  size_t pos = 0;
  for (size_t at = text.find(pattern); !pattern.empty() && at != std::string_view::npos;
       at = text.find(pattern, pos)) {
    out.append(text.substr(pos, at - pos));
    out.append(content);
    pos = at + pattern.size();
  }
  out.append(text.substr(pos));
  return out;
}

namespace {

// Byte offset after the leading White_Space characters of `text`.
size_t leadingSpace(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    size_t next = i;
    if (unicode::category(unicode::decodeUtf8(text, next)) != unicode::kSpace)
      break;
    i = next;
  }
  return i;
}

// Byte offset where the trailing White_Space characters of `text` begin.
size_t trailingSpace(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t k = end - 1;
    while (k > 0 && (uint8_t(text[k]) & 0xC0) == 0x80)
      --k;
    size_t probe = k;
    if (unicode::category(unicode::decodeUtf8(text, probe)) != unicode::kSpace)
      break;
    end = k;
  }
  return end;
}

} // namespace

bool normalize(const std::vector<NormalizerStep> &steps, std::string_view text, std::string &out) {
  std::string current, next;
  bool changed = false;
  auto view = [&]() { return changed ? std::string_view(current) : text; };
  for (const NormalizerStep &s : steps) {
    std::string_view in = view();
    switch (s.kind) {
    case NormalizerStep::kNfc:
      if (!unicode::toNfc(in, next))
        continue;
      break;
    case NormalizerStep::kPrepend: // only a non-empty text, as in Hugging Face
      if (in.empty())
        continue;
      next.assign(s.content);
      next.append(in);
      break;
    case NormalizerStep::kReplace:
      if (in.find(s.pattern) == std::string_view::npos)
        continue;
      next = replaceAll(in, s.pattern, s.content);
      break;
    case NormalizerStep::kStrip: {
      size_t begin = s.left ? leadingSpace(in) : 0;
      size_t end = s.right ? trailingSpace(in) : in.size();
      if (end < begin)
        end = begin;
      if (begin == 0 && end == in.size())
        continue;
      next.assign(in.substr(begin, end - begin));
      break;
    }
    }
    current.swap(next);
    changed = true;
  }
  if (changed)
    out = std::move(current);
  return changed;
}

} // namespace kiln::tokenizer_model
