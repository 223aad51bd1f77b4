#include "schedrt/types.h"

namespace schedrt {

std::string format(Action a) {
  static const char* const kNames[] = {"F", "B", "W", "BW", "R"};
  return kNames[static_cast<int>(a.kind)] + std::to_string(a.mb) + ".s" + std::to_string(a.stage);
}

std::string format(const Transfer& t) {
  if (t.dir == Dir::Send)
    return "send " + format(t.producer) + " -> r" + std::to_string(t.peer) + " #" + std::to_string(t.seq);
  return "recv " + format(t.producer) + " <- r" + std::to_string(t.peer) + " #" + std::to_string(t.seq);
}

}  // namespace schedrt
