package sandbox

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/stint-run/stint/internal/testwasm/wat"
)

// rewritePins are the sha256 digests of what preparation (validation,
// rewrite, data split) makes of every fixture, computed on the commit
// before the rewrite moved to sandbox/internal/rewrite. The rewrite's
// output is what the prepared-module cache keys on rewrite.Version for: a
// change here without a rewrite.Version bump would serve stale entries.
// Updated for rewrite version 23 (issue 37: the checks' cost on real
// programs): InterruptBudget 1<<17 (the refills, and the functions split
// and given exit checks, change with it).
var rewritePins = map[string]string{
	"abi_call":             "5c21b421c1db4e320348c06ee29cc7f8 8103b804236ea706fa99a5af83b8d015",
	"args_env":             "eaad2e295310e7e67f6afdc36e9efdf9 9296c05a3c5f77940f51f2681965a171",
	"badptr":               "7b4ad8d5aed8bf404a1736b1ce7c0b8e fc0e6c0e1803e8c1dab6fb61c6ff3aaf",
	"badptr_load":          "9ea2e09bdcd95e88e91f03af66d1d871 d63e8339636a6f55dc8a97262226b6af",
	"bench_toploops":       "736d4c7dc58398324c2f33c8fad0d837 acd39a511a24632e68310d39d5b0a0ea",
	"bigmem":               "63b6d6cdbb40fa0862c57e7211fc882b d9fe7eb40958c33099b6b46a12bfdf21",
	"bound0":               "36aca8ecfb7d55c6d95c2ca8eaa1601a d74fe54303eef4160de8cec5b3df52ed",
	"bound1":               "899291006680178df5ff959824d6b43a 8103b804236ea706fa99a5af83b8d015",
	"bound2":               "e5e5568c168761d4202f0f4986e0c248 be2bd4f70bb0378201ecbfa194d54bc4",
	"bound3":               "a9f24b75dfbd3bd175f9e37cf2b2c7fb 8103b804236ea706fa99a5af83b8d015",
	"bound4":               "69825c901269746272ebb8d8c10f979b f0f37cb5194392900868563e84218008",
	"bound5":               "fc2815412c3ad20eb505f6e54160d822 11418480e5d1efc7e2e98f93c93d734a",
	"bound6":               "7906195e1abc20fe0476155f013e003a 2d7c3acf1d070eff8f7fdb1f8a771026",
	"bound7":               "8a8ec009341cc3f12772b1caef75607f 3afc9e99524f8dbc235e8f22e2198870",
	"bulk_ops":             "5235ff1c5a0537cef796005dfe26ff0c da81e062664c708175e81cba78a0c615",
	"callstack":            "5e489edf87621f78c4e6a8ab807f58dd 9296c05a3c5f77940f51f2681965a171",
	"checkpoint":           "7a2079e5bbe0b8d5c770fc85fa983d88 e5400841ce74ba18ed5c3e5bd8e9e40d",
	"checkpoint_then_loop": "357385ffa42361a85b1b2cb9e6cef573 9ac3ca8800cfd149e0f4ed702699f501",
	"counter":              "af40f0da9e87b06d6aa9972e3c64af24 05a996097ab5d86eba4f8fcf3c79fe5a",
	"cpecho":               "7e1d0fa9e00f7b27f3e96d131481a9db 616338516c99fbbac1c4198aa5fd5798",
	"dirty":                "d357815e13e4f6098e89fbdaebb4352e d34069b0f074335e5847d1b7824dbde5",
	"echo":                 "00a0166ad261fc7be6f9ee8a0379f62e b1dac6aa6ef92dd361b27f6db8bfaf38",
	"exit3":                "a8a8bf1e42ae3b6228efe6e80fa7953d 0c66f74bfe943fd77bbd6b655e8df778",
	"flood":                "fee2e9e67fded595ccda1eccdd602889 61d156f3ffa7931efd8c5f2fdad8118c",
	"flood_stderr":         "078d63bcd1ce6a15b80b8b529a1906a7 33e11023d25af6812b175de8b265d7a3",
	"import_internal":      "491267aefcbf680de0a38d0ddda11d8a 491267aefcbf680de0a38d0ddda11d8a",
	"loop":                 "e6e06f785f6095798c1f26a217090a30 345b180f48d4cb4b9441264945538742",
	"memgrow":              "630d4cd1149c85d73cd834b5568bddc9 8887de9af11d25d179d9e411cdabc2fc",
	"mount_diskhog":        "45fc9411d0702028211a93570611f216 2db90cfbec63964d95d4e49a5ac75ffa",
	"mount_escape":         "a8d949e3e5617d5ab2e7ba8f07ebc1fc 2db90cfbec63964d95d4e49a5ac75ffa",
	"mount_fdhog":          "363c22b1a5024696c8a9f5c4a6c6a238 9c0e0116cc89ed22e724325817c50852",
	"nap":                  "c8242000d0a1a587016e298dc85d1d74 c4c080e3505c753fe739971b34f0e822",
	"nested_loops":         "0704ce51b9ac42c1293896dd53f8d338 048e37780efb3ac526862f8cb206d45a",
	"nested_loops_start":   "139afb6cb869b38eb114db746cc08f2c 79feff362deff9c99670406fd703a028",
	"noop":                 "c22c6036df1844c8afb7ab044e2c5451 44f8667fd56aae288d5e6dde387e7242",
	"plugin_badsig":        "8b25a111f0a1e31eea5658224a0f70cb f268fd98b2016f4041f6efaad7355e53",
	"plugin_basic":         "0bbb487e92ab3c2c6b28e4c9dd8034fe 8103b804236ea706fa99a5af83b8d015",
	"plugin_block":         "07ad54cdf3b2b24674c74612eb6758c7 f7208ad8b521eff259070ac9ba31aeb5",
	"plugin_extism":        "d719f4a2a88990eb13eb286071a81ea1 2db90cfbec63964d95d4e49a5ac75ffa",
	"plugin_host":          "acfc8667b2df002ec4f9dffed273b707 7f1de6f12aa025288bae65e5ed508f1d",
	"plugin_http":          "cfe64fdeb9015b827fb7b0c2b350adab 2db90cfbec63964d95d4e49a5ac75ffa",
	"poll_noclock":         "7f867f279e2e24ca0ab6ae9c24d7dfc3 44ed6b56ed9f67c4b05eef7c84eb4635",
	"progress":             "5c049f443f30304b4eac794d3504ab80 4666ed3342a483e505da9c7f3b796f4b",
	"progress_wait":        "18eaaf350cb8c61b63ec092cec3f047a e0f79b65aacb8b746ac4768463628218",
	"recursion":            "a306a098a1f4da673a1124af366b3152 9921fd6840f7b87de71e5a823ee30429",
	"resume":               "2c73cc8e24a62317431a7bb9783cbbbe 136a1cd1d6113b1c3f16fcd4b2f83c36",
	"rewriteprobe":         "d1824c1973c8ebd6cea1c23208622d59 0d01ea6d6a8868374359ec9f248edb6d",
	"seams_stderr_fail":    "fcf461d5ab7a209c7222174a6c09475a 96929ed6b150db87417d21e5037b5543",
	"shape_arm_big":        "1cf4e9532cd9b9117087588085d0de1b 54bcd110f098c3941099bc8586857bd8",
	"shape_bench":          "c44510a59ee713b763bea634d5a765a2 0476f3263ed1ff2467fc97a09fae1d12",
	"shape_br_if_loop":     "f93f98a208079c1457ac384634b45680 46e0c226cf43222e0ed6dcc518d9435c",
	"shape_br_table_loop":  "c83f98dfce80c8b33f0ef89958c15329 df4286e3430ac6aca802fd7d5800faa6",
	"shape_bulk":           "efa17fef8cfed9846e06363e7b793fc4 b01059022afc877737d092ceaf884a97",
	"shape_call_indirect":  "d176f2271647a5de401cd5c8f593dd57 c5d245f6f085fa96094d3df2558ec070",
	"shape_huge_body":      "d147cec8d9065c7d20018c5e26b0d004 e367ba78a66fbad39e7f8a233d1a2845",
	"shape_leaf_run":       "829b04446cc838a26482b8fb3122f4a7 4e811982eb2e1f700c12738b122f1af5",
	"shape_loop_br":        "333b9d59fbd3ef2e630c3514a681a369 df8f75a2bae2987f60b403e7d0c0dd61",
	"shape_mutual":         "9e0c439e8f64ffa060994878df4d5100 b8648cc2dfc6a316de8df366127ac789",
	"shape_nested_loops":   "b7026df5033ee5f6d1a2b43bac6d1fba f24f9c94a2b05e7c6af5d755e843bd6a",
	"shape_random":         "74f1c72410d8c1490367fb202b65410c c125fd9b676c7bd87e4cd284c7448304",
	"shape_recursion":      "0feec722d74ffec8f6640934004be86d 9e219e8ffff3c4d751b6718e63c573be",
	"shape_start":          "3c7348bb76f33bd8c3b2f9c1bcd05630 ae75c29187f81a86494567d5b5100a4b",
	"shape_tree":           "58043259babd97b820710d528760c9e5 df9aeefcec4da989a2a4c83826fe1d8d",
	"shape_unrolled":       "64f7b19645f15346c0a1304fedd0b930 28494c9f7fc4217480daf25e5faf21c8",
	"sleep":                "deaeb2f0e757d2ab022031dcc5c114dc f39efee26a8a8ff69efc67a81e8c65d1",
	"stdin":                "b1c9d202369c6a2eb2280b8b0a7b08b8 8012c303bbd9edc32be927a0136f80f2",
	"stop_aware":           "8170b5fdc6b3408491f2d780aaaa9958 8a52d84a9cb106ffb543e7011ba0dbdf",
	"stop_ignore":          "569aee61bd11b8ade0b94262fbbc9f8b f78bcbcc515a61728c25ef0364be38be",
	"stopping_block":       "9a696a9a0ec61132ef4b7d8474a367d5 be1989a027a6bd187a33b1e5a357bb76",
	"stopping_fifo":        "8b98bcbd4caec77990fc6e4933d85700 4506f362649d6057d0103017146647c5",
	"trap":                 "01bd48da64800b3406b69a2ce93d2679 408c64cb7cd3f901a7982df5250af2d4",
	"unknown_import":       "b7d6d0534f1d0e73c5dca5fa02db50f8 0ca8804f3f2ba3a1a5c8c339bf94fb6c",
	"unknown_module":       "373f741fa0fd45634a918b85aa498138 2c447401554f9c60054d9c5172c4efeb",
	"upper":                "929ca361e6055cb2cdbcd9cf04c1f299 f5a5412e735874168228e154695a4d74",
	"wasi_counts":          "dccaa4b8dcef72d16ebf83286bb417a3 8103b804236ea706fa99a5af83b8d015",
	"work":                 "d4a20d0e437f55a436fcd90bc1c4587a f8b49e8e6128e8935aff13a896eb2d8f",
	"work_arms":            "46e3f40e4f4418d71e711840b77d58e8 1b9cf39d3bb52017ef253c0985101c65",
	"work_big_leaf":        "2b0a7402da8bad023a5f99c132c943fa e6d93489a4e96d680f3e737d8c745f87",
}

// preparedDigest hashes prepareInput's result for wasm under lim in every
// mode, or the refusal's text.
func preparedDigest(wasm []byte, lim *ModuleLimits) string {
	h := sha256.New()
	for _, loopChecks := range []bool{false, true} {
		for _, images := range []bool{false, true} {
			in, how, err := prepareInput(wasm, lim, loopChecks, images, false)
			if err != nil {
				fmt.Fprintf(h, "refused %v\n", err)
				continue
			}
			fmt.Fprintf(h, "%t %t %d %d %d\n", loopChecks, images, how, in.minPages, len(in.wasm))
			h.Write(in.wasm)
			if im := in.image; im != nil {
				fmt.Fprintf(h, "image %d %d %d\n", im.Start, im.Size, im.MinBytes)
				h.Write(im.Data)
			}
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))[:32]
}

// TestRewriteOutputPinned checks that the rewrite's output for every
// fixture is byte for byte what it was (rewritePins), under the default
// limits and under tight ones.
func TestRewriteOutputPinned(t *testing.T) {
	names, err := fs.Glob(wat.FS, "*.wasm")
	if err != nil {
		t.Fatal(err)
	}
	mods := map[string][]byte{"rewriteprobe": rewriteProbe}
	for _, n := range names {
		mods[strings.TrimSuffix(n, ".wasm")] = wat.MustLoad(n)
	}
	for i := range uint64(8) {
		mods[fmt.Sprintf("bound%d", i)] = genBoundProgram(rand.New(rand.NewPCG(i, 25))).wasm
	}
	tight := DefaultModuleLimits()
	tight.MaxFunctions, tight.MaxFunctionSize, tight.MaxCallStack, tight.MaxLoops = 8, 256, 100, 3
	var keys []string
	for k := range mods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var got []string
	for _, k := range keys {
		def := DefaultModuleLimits()
		d := preparedDigest(mods[k], &def) + " " + preparedDigest(mods[k], &tight)
		got = append(got, fmt.Sprintf("\t%q: %q,", k, d))
		if want, ok := rewritePins[k]; !ok || want != d {
			t.Errorf("%s: rewrite output digest %s, want %s", k, d, want)
		}
	}
	if t.Failed() {
		t.Logf("digests now:\n%s", strings.Join(got, "\n"))
	}
}
