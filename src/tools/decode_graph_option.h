// decode_graph_option.h - a tool's --decode-graph auto|on|off, as kdsl-run, kdsl-bench-engine and kdsl-prewarm take it
#pragma once
#include <CLI/CLI.hpp>

#include <string>

#include "models/engine/engine.h"

namespace kdsl::tools {

// Adds --decode-graph to `app`, its value stored in `value` (one of auto, on, off).
inline void add_decode_graph_option(CLI::App &app, std::string &value) {
  app.add_option("--decode-graph", value,
                 "auto, on or off: each decode step's launches (and each speculative check's) captured once as a graph (a CUDA graph on "
                 "NVIDIA, a HIP graph on AMD) and replayed, tokens and positions read from device memory; auto takes it on a GPU")
      ->check(CLI::IsMember({"auto", "on", "off"}));
}

inline models::DecodeGraph decode_graph_mode(const std::string &value) {
  return value == "on" ? models::DecodeGraph::On : value == "off" ? models::DecodeGraph::Off : models::DecodeGraph::Auto;
}

}  // namespace kdsl::tools
