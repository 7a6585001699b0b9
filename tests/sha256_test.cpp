// The policy hash's SHA-256 (engine/src/table/sha256.cpp): the FIPS 180-4 example vectors (NIST's
// "Examples with Intermediate Values" and the one-million-'a' message of FIPS 180-2, appendix B),
// the padding's block boundaries against sha256sum, and every bundled policy's hash as it was
// with OpenSSL's SHA256() (tests/golden/policy_hashes.txt).
//
// RECOURSE_UPDATE_GOLDEN=1 rewrites tests/golden/policy_hashes.txt for review instead of comparing.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support.hpp"
#include "table/sha256.hpp"

using recourse::detail::sha256_hex;

TEST_CASE("sha256: the FIPS 180-4 example vectors", "[sha256]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 448 bits: the padding's length does not fit in the message's last block.
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // 896 bits: two whole blocks of message, then a block of padding alone.
  CHECK(
      sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqk"
                 "lmnopqrlmnopqrsmnopqrstnopqrstu") ==
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  CHECK(sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256: messages around the padding's block boundaries", "[sha256]") {
  // Lengths in bytes of 'a's; the digests are GNU coreutils' sha256sum's.
  const std::pair<std::size_t, const char*> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {57, "f13b2d724659eb3bf47f2dd6af1accc87b81f09f59f2b75e5c0bed6589dfe8c6"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"}};
  for (const auto& [length, digest] : cases) {
    INFO(length << " bytes");
    CHECK(sha256_hex(std::string(length, 'a')) == digest);
  }
}

TEST_CASE("sha256: every bundled policy keeps its hash", "[sha256]") {
  const std::string root = test::source_dir();
  // Each path compiled as one bundle, as `recourse compile PATH` does; one line per policy. The
  // policies of rules/bench each define "*", so each file is a bundle of its own.
  std::string actual;
  for (const char* folder :
       {"bench/peer/recourse", "examples/fuzz", "rules/bench/actionable.recourse",
        "rules/bench/code-only.recourse", "rules/bench/generic.recourse",
        "rules/bench/hardened.recourse", "rules/examples", "tests/cases"}) {
    auto r = recourse::compile_paths({root + "/" + folder});
    INFO(folder);
    REQUIRE(r.ok());
    for (const auto& p : r->policies())
      actual +=
          std::string(folder) + " " + std::string(p.name()) + " " + std::string(p.hash()) + "\n";
  }
  const std::string golden = root + "/tests/golden/policy_hashes.txt";
  if (std::getenv("RECOURSE_UPDATE_GOLDEN")) {
    std::ofstream(golden, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(golden, std::ios::binary);
  std::ostringstream expected;
  expected << in.rdbuf();
  INFO("golden file " << golden << " differs; actual:\n" << actual);
  CHECK(actual == expected.str());
}
