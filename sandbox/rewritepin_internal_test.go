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
// Updated for rewrite version 22 (issue 37: the verifier's bound): weights
// by instruction class, the exit check, split heavy functions, the calling
// arm only up to bigBody, call_indirect's reach by signature.
var rewritePins = map[string]string{
	"abi_call":             "8fef7f8a815cac34ba7170819c178ca2 8103b804236ea706fa99a5af83b8d015",
	"args_env":             "d124340cc440e1e0a9a59d189f9d6da0 9296c05a3c5f77940f51f2681965a171",
	"badptr":               "c710edc0a73d9b3e0358b4a0fc5be741 95f6838536d2cbeba3b9c9f2d2317674",
	"badptr_load":          "d3e7a1ceff9d0cfcc177d42322fc743a 31397b2575eb33e71ac04cbdfd32a814",
	"bench_toploops":       "51ee424ebde8462fec194f82b0419743 d66f825b750b833fe5efef7c5cb0a62f",
	"bigmem":               "5c1edf373ee8e5c8250a69ffc12209b9 21d6e0c93676c15ef8d82ee435627f0b",
	"bound0":               "f876af2c3fa25f92a9762c4c8bd74b2e d74fe54303eef4160de8cec5b3df52ed",
	"bound1":               "779a7e059ebbbd55676a17b084b6e064 8103b804236ea706fa99a5af83b8d015",
	"bound2":               "855f873de00f3205957fadd66f1b3a58 be2bd4f70bb0378201ecbfa194d54bc4",
	"bound3":               "34a96deddff37a6efb9f8e8ee7ecb10e 8103b804236ea706fa99a5af83b8d015",
	"bound4":               "b1ef7266e2b2d0f03bdb2f2851b9cdc1 fd06321c6080760adb6ca0d312114157",
	"bound5":               "e87877c915d34c5c42c9dd19bf465f3f 74c39cb18cd694b315efbb7ece85e443",
	"bound6":               "4cc75397e8d22138bda3587d590ff96a 2d7c3acf1d070eff8f7fdb1f8a771026",
	"bound7":               "468c82d8614e9b9daf41eba9d80e31fe 3afc9e99524f8dbc235e8f22e2198870",
	"bulk_ops":             "f1a296524413312ca9cddbdc11c9c51b 448668cbeb6c0b48a55fd9c5469d7e29",
	"callstack":            "af1646cf79b6bfea5c7be060d49ce71b 9296c05a3c5f77940f51f2681965a171",
	"checkpoint":           "736839bfef1e0065a6e58c98a7fd1952 e56a0f0ae2b6abbb0eafe45176f39da1",
	"checkpoint_then_loop": "8638c78f7435502ac5f9e54c8a4d41f5 2f6825ba1349bbad2226c61759ac9948",
	"cpecho":               "6a415a7249bbaba0add52caf6badbf0d 1b2e6e81954938eb4753bebfab20c3f6",
	"dirty":                "7acb819258481668ff47eb66c1cbf1e1 fe596caaa0883006760b194d8c5b2a24",
	"echo":                 "398f077fa62bf5262a771b8811d21ce8 956beec854174d6843c7cf37aa1dae66",
	"exit3":                "9f5475c30d2d5ed03a73be717ff7011c 97b5839cc123b7cd8af8b92af8e86b59",
	"flood":                "1366739955cb8d86b82e3eab0ced46a9 6e94144a81c9ab072b3b9663d573e48d",
	"flood_stderr":         "8739c9cbad00f6b91db9508ed24e2c94 8baa0f19d0462004c6221675e1d4de74",
	"import_internal":      "491267aefcbf680de0a38d0ddda11d8a 491267aefcbf680de0a38d0ddda11d8a",
	"loop":                 "bad6904f8830e5479811e2fa9557db53 6f6f650cad91c25638b0654f22335526",
	"memgrow":              "3b9104656a0f4309e97484c3441039cf f35d97e0a388459046719c97f6c25fd7",
	"mount_diskhog":        "5548729f76df9f02fe6752f22847b3f2 2db90cfbec63964d95d4e49a5ac75ffa",
	"mount_escape":         "7b6e1013933a919341df4351575add7b 2db90cfbec63964d95d4e49a5ac75ffa",
	"mount_fdhog":          "875ad5490886ec08414ff356b7a70a9d de56131b76ca2b4ec30c9e89d9165d73",
	"nap":                  "f7661ddb424fabfd1891b8de19324eea b28a76c3a77e1a91f192a880a8ab178a",
	"nested_loops":         "2383e5d923a4e9c0810a175e7f60a30a 68282ea87b1f892850c3380df7d3e19e",
	"nested_loops_start":   "9fe1fb74d5570fcaa29aeea4d5685aa5 6cfafec5639af4304f3ac6955ff7671e",
	"noop":                 "f648812df9c19e97035609ee15d3b28a 66f5742ab70b099411e0d4e516023213",
	"plugin_badsig":        "0498cb66103d643b523ec005a41d81d7 b5f502e8abdc5998c9e3bce97319aa57",
	"plugin_basic":         "7ab957f78af41500213c83c9c8f75c80 8103b804236ea706fa99a5af83b8d015",
	"plugin_block":         "09e907f10dca3b24dc7b5c418ef3f8df ad86908b77a2a348ba847ef65b723bc7",
	"plugin_extism":        "feb5075f3e2ae11048b154c0d36ced41 2db90cfbec63964d95d4e49a5ac75ffa",
	"plugin_host":          "ea5caed8e70998570b0d1e69f5ae961d efe9c926daacd5e99c18e988dccd9a74",
	"plugin_http":          "1a8bc5b8b992d2c44fb0ef01854621e3 2db90cfbec63964d95d4e49a5ac75ffa",
	"poll_noclock":         "3bc7195c5474055a7d6eb5d0228db7ee 150577987da18e9f4f7f1135ccc30585",
	"progress":             "0b04947bda1693a54168804f76085986 0e1f6ebd20ddb40974ccb019d69e2f37",
	"progress_wait":        "052967a2c86518147f9483c60399a07f 3769c6c5f40a2952abd13d6fd1b48d27",
	"recursion":            "5a8175c35ac2d3e14f4d1810745a3959 241349513583378064f63d6bfdf59571",
	"resume":               "43affd09abb05b4529f62a8bfe34b753 89c85a4ba9bc595897cf8e22b891d631",
	"rewriteprobe":         "ae1fc35e1e2980d178bc9e88c57d6098 9a4cd4ee946c446972ade2b92d7543f7",
	"seams_stderr_fail":    "c436be7235cd591bb337ef6c4bbb7c4f 00a7a42e66fbea9a3d844710f6a87d86",
	"shape_arm_big":        "eccc22824fa04bbe98a6d1cb913a384f 54bcd110f098c3941099bc8586857bd8",
	"shape_bench":          "58e2bd518520857e2ce9e193558cf236 c3b3e7cd67c8a52ceeda7bfaeac1d07b",
	"shape_br_if_loop":     "45eb6ed275b9a1f355603fd40bbc81e3 3de48f1be00be78e73bb18ab4a25e845",
	"shape_br_table_loop":  "18edcd0e7f215a684a3beedae7028177 395ba3836028dd4ec1da50932b3dbe06",
	"shape_bulk":           "924458d6a44ada1c7b16c9b2d728e68e 2a3135eec2196738e1b369aab2f88969",
	"shape_call_indirect":  "828ffaada4c03368001bf11597971831 3fff4ace31b15627c0c2e3fa9ebb102f",
	"shape_huge_body":      "acd258acfcab530e69330809a6509277 e367ba78a66fbad39e7f8a233d1a2845",
	"shape_leaf_run":       "9fd622e9d551e2ef92ef6e1baac6bacb 4e811982eb2e1f700c12738b122f1af5",
	"shape_loop_br":        "4a5d314ff7c61035f75e8cf3cada7d40 d83477fdfd39fb51e1823c7e9fc5bf43",
	"shape_mutual":         "772994d84d0be143267a1f2752ec00a6 e10a3239894dc221218c4d444d069e08",
	"shape_nested_loops":   "388edfef8b408192dc915a1ba47e7833 dccb503e6e79674bea97e946ed19c438",
	"shape_random":         "4761d35382c9466bede8a15d0784e30f 3131b6db704295384239071b767484fe",
	"shape_recursion":      "96621285cac2a64a08cb0c94b5fc1c9e c956f893893f9bd41cce07b4b843cb8c",
	"shape_start":          "ee015fa68704dde19d0f67fb6e29dcdc 4d3f5c656a42d5e427cb861df5172ffe",
	"shape_tree":           "25c0537a6b72f5f2bff2f96c0d9086e0 32a25041959a056f6f7e9f8a62183c60",
	"shape_unrolled":       "02d0b8b37085b658c9238c4154ec2633 4939401f86c698c1f386196f15fa79a3",
	"sleep":                "2011d5aed2e084033b0f3d83cb067e70 ce332051bef63224600058fa05a4c381",
	"stdin":                "53166ddd1b0de4159831907d6071d79b 3047487def3cab2332e8db186018d4c9",
	"stop_aware":           "b9dc69a2364eb1dfa1483671bd50c3b7 d124f90678873335a6d2dce9deb54a47",
	"stop_ignore":          "6d9d5f3a21766a610cd8abe184492ad5 fe1a7be3e2901732ce1c6c0f4a7757f3",
	"stopping_block":       "7d462dfb90085039d5c4b530275dd873 8a4586a3a4bcd2fac950f494a439a74c",
	"stopping_fifo":        "8fea94e86c4cdc63dbe1796c95dfe003 e4fbc56470bbc5c3d0dbe8192e7101a1",
	"trap":                 "cf2ca39e19e71a719e54bc49552b06b5 359b67604dc8e6b2cdb53a68a4ac56c2",
	"unknown_import":       "3038c77efa41cc33d9eb22e6a819edb0 423617f1911599e8a05645cded1d3c7c",
	"unknown_module":       "4b994ad8f4d83f69dec4afdeaee00613 3050c2e1f78dc2ed913dbd24d9761f1e",
	"upper":                "ea1f648568ec060ee855255edb55ae36 cdd1580ba420c717f757ffa4a9b11faf",
	"wasi_counts":          "fdf6ffb6aa940aa78341683713039021 8103b804236ea706fa99a5af83b8d015",
	"work":                 "57f5efe1638e04f4250c188508e4457d 191ade91284db920ee90e5e7399086ff",
	"work_arms":            "4fe7e227e707737cedf9334ce4dfb492 1b9cf39d3bb52017ef253c0985101c65",
	"work_big_leaf":        "4ad2fa14cecccf02927baabb1d5f12b5 e6d93489a4e96d680f3e737d8c745f87",
}

// preparedDigest hashes prepareInput's result for wasm under lim in every
// mode, or the refusal's text.
func preparedDigest(wasm []byte, lim *ModuleLimits) string {
	h := sha256.New()
	for _, loopChecks := range []bool{false, true} {
		for _, images := range []bool{false, true} {
			in, how, err := prepareInput(wasm, lim, loopChecks, images)
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
