// model_mutation_test.cpp - mutated GGUF models through the whole loader: only kdsl::Error, never another exception
#include <doctest/doctest.h>

#include <cstring>
#include <exception>
#include <kdsl/error.h>

#include "models/arch/hparams.h"
#include "models/arch/model_tensors.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/sampler/rng.h"
#include "models/synth/synth_model.h"
#include "models/tokenizer/chat_template.h"
#include "models/tokenizer/tokenizer.h"

using namespace kdsl::models;

TEST_CASE("model mutations: hyper-parameters, tensors and tokenizer of a mutated model fail only with kdsl::Error") {
  // A tiny llama with a SentencePiece vocabulary, and a qwen2 with a byte-level BPE one.
  for (Arch arch : {Arch::Llama, Arch::Qwen2}) {
    SynthConfig c = synth_preset("tiny");
    c.hparams.arch = arch;
    c.hparams.n_vocab = 300;
    c.chat_template = "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}";
    GgufWriter w;
    add_synthetic_model(w, c);
    const std::vector<std::byte> original = w.to_bytes();
    const size_t header = GgufFile::from_bytes(original, "seed").data_offset();

    Rng rng(17 + uint64_t(arch));
    int loaded = 0, refused = 0;
    for (int iter = 0; iter < 1500; ++iter) {
      std::vector<std::byte> b = original;
      // Metadata and tensor infos only: flipped bytes, or a planted small or large number.
      if (rng.next() % 2) {
        for (int k = 0, n = 1 + int(rng.next() % 3); k < n; ++k) b[rng.next() % header] = std::byte(rng.next());
      } else {
        size_t at = rng.next() % (header - 8);
        uint64_t v = rng.next() % 3 == 0 ? rng.next() : rng.next() % 70000;
        std::memcpy(b.data() + at, &v, rng.next() % 2 ? 8 : 4);
      }
      try {
        GgufFile f = GgufFile::from_bytes(b, "mutant.gguf");
        ModelHParams h = load_hparams(f);
        load_tensors(f, h);
        load_tokenizer(f)->decode(std::vector<int>{0, 1, 2, 3, 4, 5});
        select_chat_template(f);
        ++loaded;
      } catch (const kdsl::Error &) {
        ++refused;
      } catch (const std::exception &e) {
        FAIL("iteration " << iter << ": " << e.what() << " escaped as a std::exception other than kdsl::Error");
      }
    }
    MESSAGE(arch_name(arch) << ": " << loaded << " mutants loaded, " << refused << " refused");
    CHECK(loaded > 0);
    CHECK(refused > 0);
  }
}
