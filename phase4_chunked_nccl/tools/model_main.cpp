// phase4_model: a transformer's gradients as data-parallel training sees them, on the CPU. From a preset or a Hugging
// Face style config.json: the tensors that get a gradient in the order the backward pass completes them (what
// buckets are cut from), their sizes and forward work, and the device memory of one rank's fp32 SGD step under a
// --sync strategy's buffers (METRICS.md, "Transformer shapes").
#include <CLI/CLI.hpp>

#include <iostream>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/main_guard.hpp"
#include "common/metadata.hpp"
#include "common/options.hpp"
#include "common/path_options.hpp"
#include "phase4_chunked_nccl/core/transformer.hpp"
#include "phase4_chunked_nccl/tools/transformer_report.hpp"
#include "phase4_chunked_nccl/sync/registry.hpp"

int main(int argc, char** argv) {
  const std::string program = "phase4_model";
  return ob::guarded_main(program, [&]() -> int {
    CLI::App app("A transformer's gradient tensors in backward order and one rank's memory, from its config", program);
    phase4::ModelQuery query;
    std::string csv, shape_json;
    app.add_option("--model", query.model, "A preset (gpt2, gpt2-xl, llama3-8b, qwen2.5-7b) or a config.json")
        ->required();
    app.add_option("--seq", query.seq, "Tokens per sequence")->check(CLI::Range(1, 1 << 20))->capture_default_str();
    app.add_option("--micro-batch", query.micro_batch, "Sequences per rank and step")
        ->check(CLI::Range(1, 1 << 16))
        ->capture_default_str();
    app.add_option("--blocks", query.blocks, "The first N blocks only (0: all)")
        ->check(CLI::Range(0, 4096))
        ->capture_default_str();
    app.add_option("--sync", query.sync, "The strategy whose gradient buffers the memory counts")
        ->check(CLI::IsMember(phase4::sync_names()))
        ->capture_default_str();
    ob::add_output_option(app, "--csv", csv, "Write every gradient tensor here, in backward order (default: none)");
    ob::add_output_option(
        app, "--shape-json", shape_json,
        "Write the model's shape here as JSON (what overlap_bench/ddp/torch_transformer.py builds its layers "
        "from)");
    app.set_version_flag("--version", ob::version_text(program), "Print the version, commit and build, then exit");
    if (auto code = ob::parse_options(app, argc, argv, true)) return *code;
    std::vector<ob::NamedPath> outputs;
    if (!csv.empty()) outputs.push_back({"--csv", csv});
    if (!shape_json.empty()) outputs.push_back({"--shape-json", shape_json});
    for (const auto& output : outputs) ob::require_writable_parent(output.option, output.path);
    if (!outputs.empty()) ob::require_output_policy(outputs, {{"--model", query.model}});
    const phase4::ModelReport report = phase4::describe_model(query);
    std::cout << report.summary;
    if (!shape_json.empty()) {
      ob::write_file_atomic(shape_json, phase4::shape_json(phase4::load_transformer(query.model)).dump(2) + "\n");
    }
    if (!csv.empty()) {
      ob::write_file_atomic(csv, report.tensors.to_string());
      std::cerr << program << ": wrote " << csv << " (" << report.tensors.rows().size() << " tensors)" << std::endl;
    }
    return ob::kExitOk;
  });
}
