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
	"args_env":             "484f371fe05933c4452643c93fadb863 9296c05a3c5f77940f51f2681965a171",
	"badptr":               "c710edc0a73d9b3e0358b4a0fc5be741 95f6838536d2cbeba3b9c9f2d2317674",
	"badptr_load":          "d3e7a1ceff9d0cfcc177d42322fc743a 31397b2575eb33e71ac04cbdfd32a814",
	"bench_toploops":       "0a478fb3ad726a83b80a8c7043108f3b 7735abd3a37b35591e446ab4f912c9c2",
	"bigmem":               "5c1edf373ee8e5c8250a69ffc12209b9 21d6e0c93676c15ef8d82ee435627f0b",
	"bound0":               "f63d29b8f190a5aef48ab20292875274 d74fe54303eef4160de8cec5b3df52ed",
	"bound1":               "2cea5c5b9d4f21733f099345a315efbc 8103b804236ea706fa99a5af83b8d015",
	"bound2":               "0234a5d2eb4b94e5df4b084a455cf465 be2bd4f70bb0378201ecbfa194d54bc4",
	"bound3":               "c066eb66074757f625a39d27f6835fb3 8103b804236ea706fa99a5af83b8d015",
	"bound4":               "be329f58d3fc7b3c229d4c5c5209f708 745f8cd63c32a61c5607a2e3ddc47937",
	"bound5":               "0e17cd23acdb744c2040d0247fe696d6 dd93fb16296d843785f9bcc5de5b9cf2",
	"bound6":               "1d72066ff46e23960aa6b99d97fa7662 2d7c3acf1d070eff8f7fdb1f8a771026",
	"bound7":               "70f56589341c7485654c0ded515fa38e 3afc9e99524f8dbc235e8f22e2198870",
	"bulk_ops":             "44bc1a2762c9d1c58f2331e2bfda42a6 aa1ab67cbad175e94f04c87c1639fe79",
	"callstack":            "fb5884ed9f8530450401ad34b4b6f6fb 9296c05a3c5f77940f51f2681965a171",
	"checkpoint":           "736839bfef1e0065a6e58c98a7fd1952 e56a0f0ae2b6abbb0eafe45176f39da1",
	"checkpoint_then_loop": "8638c78f7435502ac5f9e54c8a4d41f5 2f6825ba1349bbad2226c61759ac9948",
	"counter":              "25f79e7b635993de14279601373e91d0 8cbcef9d4873855dc0daa50316a56873",
	"cpecho":               "6a415a7249bbaba0add52caf6badbf0d 1b2e6e81954938eb4753bebfab20c3f6",
	"dirty":                "7acb819258481668ff47eb66c1cbf1e1 fe596caaa0883006760b194d8c5b2a24",
	"echo":                 "398f077fa62bf5262a771b8811d21ce8 956beec854174d6843c7cf37aa1dae66",
	"exit3":                "9f5475c30d2d5ed03a73be717ff7011c 97b5839cc123b7cd8af8b92af8e86b59",
	"flood":                "1366739955cb8d86b82e3eab0ced46a9 6e94144a81c9ab072b3b9663d573e48d",
	"flood_stderr":         "8739c9cbad00f6b91db9508ed24e2c94 8baa0f19d0462004c6221675e1d4de74",
	"import_internal":      "491267aefcbf680de0a38d0ddda11d8a 491267aefcbf680de0a38d0ddda11d8a",
	"loop":                 "bad6904f8830e5479811e2fa9557db53 6f6f650cad91c25638b0654f22335526",
	"memgrow":              "3b9104656a0f4309e97484c3441039cf f35d97e0a388459046719c97f6c25fd7",
	"mount_diskhog":        "4787286d36a0957d2ed99f35d8b290a7 2db90cfbec63964d95d4e49a5ac75ffa",
	"mount_escape":         "236e5581810fcd5735b92fd746978a7f 2db90cfbec63964d95d4e49a5ac75ffa",
	"mount_fdhog":          "875ad5490886ec08414ff356b7a70a9d de56131b76ca2b4ec30c9e89d9165d73",
	"nap":                  "f7661ddb424fabfd1891b8de19324eea b28a76c3a77e1a91f192a880a8ab178a",
	"nested_loops":         "3290517997692150f706451c4bcd138e ee9935dce7ed8b9272b84e774d8de23e",
	"nested_loops_start":   "8944f3bef3ac1761b4acd2802d238adb f1d4ea029e407474832cd4da64def3ce",
	"noop":                 "f648812df9c19e97035609ee15d3b28a 66f5742ab70b099411e0d4e516023213",
	"plugin_badsig":        "0498cb66103d643b523ec005a41d81d7 b5f502e8abdc5998c9e3bce97319aa57",
	"plugin_basic":         "7ab957f78af41500213c83c9c8f75c80 8103b804236ea706fa99a5af83b8d015",
	"plugin_block":         "09e907f10dca3b24dc7b5c418ef3f8df ad86908b77a2a348ba847ef65b723bc7",
	"plugin_extism":        "feb5075f3e2ae11048b154c0d36ced41 2db90cfbec63964d95d4e49a5ac75ffa",
	"plugin_host":          "c36a5c78cf6751d0e6643e2c8e7641f6 2d571bfd2a5c6ee411fc035e35ca77fa",
	"plugin_http":          "864c2e95433f230ac75a54d526eb9709 2db90cfbec63964d95d4e49a5ac75ffa",
	"poll_noclock":         "3bc7195c5474055a7d6eb5d0228db7ee 150577987da18e9f4f7f1135ccc30585",
	"progress":             "0b04947bda1693a54168804f76085986 0e1f6ebd20ddb40974ccb019d69e2f37",
	"progress_wait":        "052967a2c86518147f9483c60399a07f 3769c6c5f40a2952abd13d6fd1b48d27",
	"recursion":            "c5673a7795d14401c17af9e0ad04ba3e 32b8c95b6cc154b88a4c5747d6c4536f",
	"resume":               "43affd09abb05b4529f62a8bfe34b753 89c85a4ba9bc595897cf8e22b891d631",
	"rewriteprobe":         "78f7ececbd41c110c50ba1bd17cc143e 88a35d0f00214207f3473b37c0ce67b0",
	"seams_stderr_fail":    "c436be7235cd591bb337ef6c4bbb7c4f 00a7a42e66fbea9a3d844710f6a87d86",
	"shape_arm_big":        "2ef3aa6b2d37b902fa58f2682c1727d0 54bcd110f098c3941099bc8586857bd8",
	"shape_bench":          "58e2bd518520857e2ce9e193558cf236 c3b3e7cd67c8a52ceeda7bfaeac1d07b",
	"shape_br_if_loop":     "64314811bf20bc22fa904ff2664c0201 2f38129c824fa842ca3e3d13e89f9eb1",
	"shape_br_table_loop":  "11db72900e0dbbf7e9489fe2f1a58435 9b6ca276dea73e37c8d07d065b8d0ed6",
	"shape_bulk":           "b23ac8e6fac38d4aa384ef4c60ebde9a e7952d350eea58b17ee7f14008137889",
	"shape_call_indirect":  "c64ea121188c920f1782163ad5cc5dde 7e82d028c5099bbe38e3dabc05220d9c",
	"shape_huge_body":      "d1a416951b3cbbd674211905b03cb442 e367ba78a66fbad39e7f8a233d1a2845",
	"shape_leaf_run":       "414b2860d2f5149eea0c34f2fef796ef 4e811982eb2e1f700c12738b122f1af5",
	"shape_loop_br":        "a5cfa7fd8c6571a542ed2d4b70b29dcc 9e6cded5932b4662543913349d995ad5",
	"shape_mutual":         "9c16c1837fa12560534344b88825d727 1a60804694bddfeef3e054e868eb871a",
	"shape_nested_loops":   "a14aff573974dea3cbb0d5cb0218880a 33cda1f1c8d755eceaf146df70327da5",
	"shape_random":         "c4095e714476130cee327f6e8a2ddbef 3901cca8800582b347a884e488db17b5",
	"shape_recursion":      "c3667c645bf5e4481ae9da50f5cf50ea a8336e71b7336c2a667a74a4e788403b",
	"shape_start":          "a5c78c63a4c6022032fa10b4d06556cf 8d99670fd7a16afc0a6488ce451b70d9",
	"shape_tree":           "3dfce55acd5cea67675c6042bf4bce8c 5d85ab3013e81f626f2f32d85f85a3f1",
	"shape_unrolled":       "a4601b72d055ffd71be1a1e03f934fe7 b03785e9afa9cdbff5ac9f2b17326e34",
	"sleep":                "2011d5aed2e084033b0f3d83cb067e70 ce332051bef63224600058fa05a4c381",
	"stdin":                "53166ddd1b0de4159831907d6071d79b 3047487def3cab2332e8db186018d4c9",
	"stop_aware":           "b9dc69a2364eb1dfa1483671bd50c3b7 d124f90678873335a6d2dce9deb54a47",
	"stop_ignore":          "6d9d5f3a21766a610cd8abe184492ad5 fe1a7be3e2901732ce1c6c0f4a7757f3",
	"stopping_block":       "7d462dfb90085039d5c4b530275dd873 8a4586a3a4bcd2fac950f494a439a74c",
	"stopping_fifo":        "8fea94e86c4cdc63dbe1796c95dfe003 e4fbc56470bbc5c3d0dbe8192e7101a1",
	"trap":                 "482692da87a6405d55302e9af0f852da 2dd90c2ca25df4eaf984a38ace98f331",
	"unknown_import":       "3038c77efa41cc33d9eb22e6a819edb0 423617f1911599e8a05645cded1d3c7c",
	"unknown_module":       "4b994ad8f4d83f69dec4afdeaee00613 3050c2e1f78dc2ed913dbd24d9761f1e",
	"upper":                "ea1f648568ec060ee855255edb55ae36 cdd1580ba420c717f757ffa4a9b11faf",
	"wasi_counts":          "fdf6ffb6aa940aa78341683713039021 8103b804236ea706fa99a5af83b8d015",
	"work":                 "54be3e9a1140b970360aa78cb0f885af dad885d70ef452499c86f8eb5368667a",
	"work_arms":            "4fe7e227e707737cedf9334ce4dfb492 1b9cf39d3bb52017ef253c0985101c65",
	"work_big_leaf":        "09f03b0d0c5610aa95fe46226ae58e2d e6d93489a4e96d680f3e737d8c745f87",
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
