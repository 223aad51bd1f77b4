#include "schedrt/trace.h"

#include "run_internal.h"

#include <charconv>
#include <cmath>

namespace schedrt {
namespace {

void append_string(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) v = 0;
  if (v == 0) v = 0;  // no "-0"
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

}  // namespace

std::string json_quote(const std::string& s) {
  std::string out;
  append_string(out, s);
  return out;
}

std::string trace_json(const std::vector<TraceEvent>& events, int32_t ranks,
                       const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  for (int32_t r = 0; r < ranks; ++r) {
    std::string pid = std::to_string(r);
    sep();
    out += "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + pid + ", \"args\": {\"name\": \"rank " + pid +
           "\"}}";
    sep();
    out += "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": " + pid + ", \"args\": {\"sort_index\": " + pid +
           "}}";
    for (int32_t t = 0; t < 2; ++t) {
      sep();
      out += "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " + pid + ", \"tid\": " + std::to_string(t) +
             ", \"args\": {\"name\": \"" + (t == 0 ? "compute" : "comm") + "\"}}";
    }
  }
  for (const TraceEvent& e : events) {
    sep();
    out += "{\"name\": ";
    append_string(out, e.name);
    out += ", \"cat\": ";
    append_string(out, e.kind);
    out += ", \"ph\": \"X\", \"pid\": " + std::to_string(e.rank) +
           ", \"tid\": " + std::to_string(static_cast<int32_t>(e.thread)) + ", \"ts\": ";
    append_number(out, e.ts_us);
    out += ", \"dur\": ";
    append_number(out, e.dur_us);
    out += ", \"args\": {\"kind\": ";
    append_string(out, e.kind);
    if (e.microbatch >= 0) out += ", \"microbatch\": " + std::to_string(e.microbatch);
    if (e.stage >= 0) out += ", \"stage\": " + std::to_string(e.stage);
    out += "}}";
  }
  out += "\n], \"otherData\": {";
  for (size_t i = 0; i < metadata.size(); ++i) {
    if (i) out += ", ";
    append_string(out, metadata[i].first);
    out += ": " + metadata[i].second;
  }
  out += "}}\n";
  return out;
}

}  // namespace schedrt
