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
// Updated for rewrite version 24 (issue 38: the points of a resumable
// module's call-free loops on their slow path). The output of a module
// that is not resumable, what these pin, is that of version 23 but for
// the version number it carries (stint.rewrite).
var rewritePins = map[string]string{
	"abi_call":             "5900654204b5aea6d26520d8f57ffca4 8103b804236ea706fa99a5af83b8d015",
	"args_env":             "d0abdba1a6f1377119a28545c40ba8c9 9296c05a3c5f77940f51f2681965a171",
	"badptr":               "196f96adff5b35ea0509102d2cefac2a 9ad3e10eb31f0be80b786cb53517da99",
	"badptr_load":          "f279651d2c28035ffc3e14b36c701223 b57182ba23b66911d9b9a1e56adf6cc7",
	"bench_toploops":       "719c9edfcafe9d7954ab19f26549200a 2a2b809b8df9132c9f8df7967c38e0d5",
	"bigmem":               "be6fb14928adb4507cf5152220e86d57 6c2a06b12c3922673e8d339b0703f3a3",
	"bound0":               "76ced17a5795859cbb9db3ccc0d1485b d74fe54303eef4160de8cec5b3df52ed",
	"bound1":               "6ad4351fe65aea3fd17f91a6324dc444 8103b804236ea706fa99a5af83b8d015",
	"bound2":               "e592c2b5eacd3c4434c10c8666109f79 be2bd4f70bb0378201ecbfa194d54bc4",
	"bound3":               "4b430c5980e13579477b5b68987a6205 8103b804236ea706fa99a5af83b8d015",
	"bound4":               "6d836328527839698cfef9b3c861fd00 dc882bf1417af3512d6f9bfe862cf358",
	"bound5":               "ee5ffd8e2f4895f97c056e9be2b0ffce b4c6c31400738995c6191aeb299a584f",
	"bound6":               "4ebac1600f7b24c7458d37dc642926a4 2d7c3acf1d070eff8f7fdb1f8a771026",
	"bound7":               "744176f9d72cac53e2e5e0965e52ce0b 3afc9e99524f8dbc235e8f22e2198870",
	"bulk_ops":             "b89a1d7f35613ca399c01830f93f45eb 1ea761b62c308eace7e7aa891d1a1636",
	"callstack":            "53114c32f73bd852be42332646966991 9296c05a3c5f77940f51f2681965a171",
	"checkpoint":           "0ac783112f56be173c184aa6d8c53515 9910521fe18a42d260400f70bb929f73",
	"checkpoint_then_loop": "b184e3a9568d1d82fb70d1fe022b3d40 3476773e51ff31bb9bd2496208e1b509",
	"counter":              "f9a7d9b4880443194472dba39b1a6b81 eb67baf972299f63bf4cc75c2c822444",
	"cpecho":               "4f451b6cdbd3badc42add4f8348a5f8e 6a6d6a7cce9f68d8de1b6c7fdc901e9e",
	"dirty":                "cfc831aecf101f899f43cf99ec5d7407 b3eb4cd4fb95ae2a08ac2cffcb18065c",
	"echo":                 "c11d3e0dac334cba7dc91378108d4518 ec2e291429e1a14e1eb7472bed1d35b9",
	"echo2":                "6d5eca2d6d025c77d89ba2181381e8c8 7944ff6fba4a118a0618e48fbd850e70",
	"exit3":                "0e386bcef7643a7395e923c6ec2f4d38 7b03471a77224b17d346289939ff9d3c",
	"flood":                "ff84a6893e86a45441c2394a30297d5c 6236389155753e52356dfa48b1a32d0d",
	"flood_stderr":         "49af36e572e5d8094c3de733b4d3acf6 028e70b1d1cdda942b41805c74342793",
	"import_internal":      "491267aefcbf680de0a38d0ddda11d8a 491267aefcbf680de0a38d0ddda11d8a",
	"loop":                 "0110cdd815864099ac150634f47fb4e1 d134d851033011b8e7a302519d47f7ba",
	"memgrow":              "82b062bc22724628d2dd568c27cab2a8 d100eb7dc0facf9422d4e87d3b19953a",
	"mount_diskhog":        "e39b29b978905ef1e429c0afe470ef32 2db90cfbec63964d95d4e49a5ac75ffa",
	"mount_escape":         "19356685d9b68eda38262ee623d80c10 2db90cfbec63964d95d4e49a5ac75ffa",
	"mount_fdhog":          "81eb4eca151a948e2845efc6b92d3dc6 58de225af862fbb1c4f74686b332e42f",
	"nap":                  "5be144452bc3e02b7c4a178f6986ebd1 be1f38f122d85eef3ff1aa424a5f9610",
	"nested_loops":         "a43dbc6429da7b7c1961c4bde1ccffd8 b2734fb09773aad7d4a8f60f13eeff15",
	"nested_loops_start":   "2744a7bcb5903d09565482433cf709b6 9666e7ce83f970ad285b88f713b9d046",
	"noop":                 "f989e8f133ca2ced4b24ab501057effd 590a38d52cf05bc3ea46e606e2b68378",
	"plugin_badsig":        "d21a08d4581cf1a0d071d3986202ffc5 96bb782c82ffb6a614cd40a3a776b0a2",
	"plugin_basic":         "a4a3be888a5b4a03ce48806d913c5fdf 8103b804236ea706fa99a5af83b8d015",
	"plugin_block":         "ae823caa5936bfae3459982d3d05c9b3 6df33232fbc8927cd100dc55d1486319",
	"plugin_extism":        "47810d7315e8216dc3d8e1dd2b15ac9d 2db90cfbec63964d95d4e49a5ac75ffa",
	"plugin_host":          "d7c373800ba081e1c0e04740097c2917 7854f9419ebda46155f2ca7deed7e81d",
	"plugin_http":          "d20e86f569cdac538a761ca4ff642397 2db90cfbec63964d95d4e49a5ac75ffa",
	"poll_noclock":         "140b43f1dc97c103f2a8cdf1c2b0cf94 e3d84e1f804f31373507a3d750c9b616",
	"progress":             "daae88ff8d640a144a2c7bd00ee36b66 03953aa995ec2657cccb3e8918561021",
	"progress_wait":        "7c6a57c3ad27e65eff3430fc8f50770f b1b5d9b43b901824d8743afc5a44b2b5",
	"recursion":            "5f61b9b49931eb47fd6d575f901d5ed9 a376189bcd5066bc494d388d3dc9f7b1",
	"resume":               "22108c67f14600efe5e7393da45b57c2 1299ac87679e3fbc64e393d1e08e14fe",
	"rewriteprobe":         "9bf45d8e98e5f8c717fb4d86ecd03577 22aa8419bfa43aaf51cf7a230c9fd6d5",
	"seams_stderr_fail":    "48c4b8e32f536758c4a482e6b7978b4b c091f8d4250402ea0de492e1802f3577",
	"shape_arm_big":        "39535a2ac4d2906f674c0a59124df70e 54bcd110f098c3941099bc8586857bd8",
	"shape_bench":          "a25e4a112cb4655496dab20a444a0f01 c0345edc00fa5ad7b539ea9b4f3ad9b7",
	"shape_br_if_loop":     "6be194f556521518bea5fe86613786a3 de32d26c45f2b0042303237c93aa4fff",
	"shape_br_table_loop":  "9517921e76a8fee6a5e9040ad131c4cb 09ff62fd10c1c189994c85159900814f",
	"shape_bulk":           "aca5bb944b93a7af75c96990d195181e 903f24a8eaaff58dbc41803b12572a2f",
	"shape_call_indirect":  "57037fba09114fda57d402176857f78a e7343b964db9c1efd6e84bfad357c18a",
	"shape_huge_body":      "06c1d00f4005724eade81f16f078b04e e367ba78a66fbad39e7f8a233d1a2845",
	"shape_leaf_run":       "d22c2a2e69f4577cd030433130b0bbaf 4e811982eb2e1f700c12738b122f1af5",
	"shape_loop_br":        "b26ee408cba11ff32b74ebb6c864208c 0043efa014d7162dc03d92b9a81ee361",
	"shape_mutual":         "2828b08747b0a34098d1f50bd6a3bc89 ccf53808537ddb2ec46daf8ba5ba34f1",
	"shape_nested_loops":   "231af20ef01e4bd23eebec3002274c71 15a56509595a41fa5187fda13ddc5c7b",
	"shape_random":         "a11fd212958683144bfb7e27b7cf9516 3e9b85628d8d813e3df548414fb86355",
	"shape_recursion":      "b4655822cba1081eb445679300430af3 dc819b18a84fcad56b8fad767c70b767",
	"shape_start":          "8d03f2d6e6a269df8e4c5bdfe349a217 3b67d7845ae1750371e6592608ee60a6",
	"shape_tree":           "796b4fe47548a46990fbd666a1b4dc8b 458f021169783fa3bcbf3c28142dd755",
	"shape_unrolled":       "9b9560bfba55705ae17259dafaa5dbb3 afae4aabc0057fdb483069db4da0f19d",
	"sleep":                "0c25d446c49fce0ec3476b5685d9fa6e 571bf2dbb134c5c408d6d0114da9b685",
	"stdin":                "579320a23786897b1d51b8de7b2f84dd ecf6369c264640ebd8c1d00cc622d102",
	"stop_aware":           "d7947a0122a88e6da10a2b78c7b5d279 e15c12bd9ac9d81e8d769add972d4e21",
	"stop_ignore":          "5284b5359d0ec54eed1b3b97172de48d 3b0400e7031d61eb5d698a7fb696c47b",
	"stopping_block":       "eafc83f10b024df5b9d6c4cc6c1b549b a69628934bdb4fec79d19c08af651edc",
	"stopping_fifo":        "7c4d2acf04ef70f88c9f6027ae030f2a 59e675f1c608479863db5211cbe47150",
	"trap":                 "d75e1c3c9021227c1e6922fcb5969a38 140f482954929a94e9c97e6517051027",
	"unknown_import":       "a4fb58c84d5b9fd89b8c8ee26b14f6a3 424763eaa900c0788d6f56ad31eea648",
	"unknown_module":       "64d8b2ae4bdbb4eae5a17e5b35f7d3e9 68dca6025e9ae9e855da98f88c4fb9b3",
	"upper":                "ea0944a5814fde160ff8dc9bdae75314 933dd739447bff55d47cb0c29f28dece",
	"wasi_counts":          "3abd0caf9aa8cd5aa3268022f392b8ef 8103b804236ea706fa99a5af83b8d015",
	"work":                 "110f1f0d899f91c3d1c2f20938d2eb70 6653e8d6004d46c68ccec6389cd28c04",
	"work_arms":            "beb53bb797dd15958e691911f04d29be 1b9cf39d3bb52017ef253c0985101c65",
	"work_big_leaf":        "2b2384649f08d29f27c980969335c042 e6d93489a4e96d680f3e737d8c745f87",
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
