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
var rewritePins = map[string]string{
	"abi_call":             "cbf7521f669457c9710aeedd0c9e9013 8103b804236ea706fa99a5af83b8d015",
	"args_env":             "03462d43d11549a5eb4e3496bc8ac460 9296c05a3c5f77940f51f2681965a171",
	"badptr":               "08450000043eed58ef173cd022e1931d 9aa628709b49d7e6e359cc23353e63ce",
	"badptr_load":          "49fb9250f4bb0367e1164ca4794015dc 4b1980b42143fc160aaaa01652db81aa",
	"bench_toploops":       "2bfe30aa3509131d0d459af466a456d1 9ffb4c6b1c9c121a220a1823660d3ad1",
	"bigmem":               "2e4fe1747f41adc64c532d39b8d33222 e6ac1109e9faf2200f8add3f00e21b6c",
	"bound0":               "f6f31666e64648ab7fada3c46e828165 312d16378e2d36f66bf6275f6adbe5c0",
	"bound1":               "085de533362bc82ceefbb9c871a85d29 8103b804236ea706fa99a5af83b8d015",
	"bound2":               "4a3c878ede22c4ac5a4f7f80318c3733 ac4f2927407a50112cd5b4feab4446e6",
	"bound3":               "5d1e79e96b5425771a55b68a7e9bddf7 8103b804236ea706fa99a5af83b8d015",
	"bound4":               "32130540782067a4c498ef2b4e3e9062 9dceddf4f26844b459a372f184edea4c",
	"bound5":               "c2b62b69a18c71e7c3621e7fd32dc237 6122c0abc6b955a51c214d5860be62dd",
	"bound6":               "b4a61c73a7b1ebdc76a65275d93cad5f 595031975b8faea17b60e11b518df322",
	"bound7":               "f55ff70b52b28d6812a1d942d91151b9 128519f04c292ba08ad071fbd6ccd01f",
	"bulk_ops":             "8695e24984bca5380db263a635bc9749 a46fe83cdf9242eaae8f049eefc86a4b",
	"callstack":            "b3c70bb627aa60017106f108250cdee3 9296c05a3c5f77940f51f2681965a171",
	"checkpoint":           "8b44b6d2aa5a19fc0192fe556441c54f 28a81aaa13b3bd8af9e6a61dac4e357e",
	"checkpoint_then_loop": "ff918c43b719acfca397ceed7eea5371 c71f026b6245ac6545e2b435994e0938",
	"cpecho":               "72a4a7a3854b2b52851b71f99e3fbe11 abcf5d72e4de1cf806000d3ce2ac85f0",
	"dirty":                "962dcedd9187d7dd6312dbed6e108e6f c6abcc5456f6ccb4cc68259eb4a3a9d3",
	"echo":                 "9b68dfa1ec8eeb73833968c79fe3a760 fcf4ef0db6c7c37c07ff60aee46fdc98",
	"exit3":                "b4cb17e15f42a7f4458c95951739b407 bfb6b4ef2e23894a8d7a4a3a15faaa3f",
	"flood":                "f3a6e90cf691689ca0a04337d01256d3 9e69c69d25d24dcf134ff43a6815b895",
	"flood_stderr":         "42018d2bafa00d62e01fce7ea73d2344 d52414ec922de32cf73068754326cadf",
	"import_internal":      "491267aefcbf680de0a38d0ddda11d8a 491267aefcbf680de0a38d0ddda11d8a",
	"loop":                 "4924e266062e982af0cebbcafbec541c 90174adce2fb9ffc759bda97e6e9cc67",
	"memgrow":              "a68fd8dd81fe98f32c8f048448974957 b06075ffc0ce5d844afbb26c9e6c4191",
	"mount_diskhog":        "7d1bbb66c55bda44ecf08ca9e569a194 2db90cfbec63964d95d4e49a5ac75ffa",
	"mount_escape":         "723f75be01d805e5f71079166db19b28 2db90cfbec63964d95d4e49a5ac75ffa",
	"mount_fdhog":          "6461ef9d3c4478f48291ece6851e3363 b2b4bf42e69c730936984c4435d537d2",
	"nap":                  "ec0cf8f1c0b26c394e9c8f9ab9eba9d0 fd8737c00a6389006b23834de41dd0e4",
	"nested_loops":         "6108a5133c5302cd2fcb68d9b47a3915 53e0c3b7e7988d3a5d67e35fba878213",
	"nested_loops_start":   "5c0c869310dae95c8444766725c32291 334ee0d747b4b41c66b594a188dcbaea",
	"noop":                 "fda97bfa3cfc9410919ca8168bab3633 bfbf414fe659243bfa0dc552d5280235",
	"plugin_badsig":        "9b0a22926a39f9fff770dbd7c849e586 8643128e9c32b9372058d71fa2938cae",
	"plugin_basic":         "e4ce773c699df91abdf1aefb9d74b375 8103b804236ea706fa99a5af83b8d015",
	"plugin_block":         "944e4277965d7829de565b9bc3610529 df72c98405880734d9772d98cf534d21",
	"plugin_extism":        "7eefdb3d666d511618f107713eaef9b7 2db90cfbec63964d95d4e49a5ac75ffa",
	"plugin_host":          "c871b3edc538a0c854394daa9ca6de0e 2024955dbf038e81db8edc38011b4bb6",
	"plugin_http":          "a525178c4b15924dd24d9f26c4ec0577 2db90cfbec63964d95d4e49a5ac75ffa",
	"poll_noclock":         "024062e87b734300a7e2329e86092fc7 7b24f33e840a8bfad0ddcd42ab66cdc9",
	"progress":             "a40eb59dfd765ee84621ae5404d4f894 5b0ff25fe2ed66ca85060921be6b14b4",
	"progress_wait":        "32142794e95809b071611eed68cc93f0 c29a37c4efa75d7b484fa0b2f507a0c8",
	"recursion":            "ee7e3a79c19c0544b8bc2b7dd17fa1ec 9ac6dd12740de98311b56ff05041946d",
	"resume":               "57d79993e73ae16729d2c24d01284dce bf8d1abfcfe286ef116e3df648fc44af",
	"rewriteprobe":         "6cbdb8d0f8c7b586c785565521c5b6f9 0edbecedfe0d48f8a6ff20ca4d71c822",
	"seams_stderr_fail":    "ef9b368db5eeb9fff66fd85b018d5ea4 4fd54062273a6ab7283bd7fb7d9591f1",
	"shape_bench":          "79e0a7a7c45b0783589338a5cd42f803 1a9721e2fd0e2609ca4b574c798258b7",
	"shape_br_if_loop":     "5e126a7d9ec9c52db13669fa35b9ff23 70b3f271de6270803dbde04872da8832",
	"shape_br_table_loop":  "786dd84a935e850b6c9b634a542981a4 0f32daa711d369431f5f48e67e5fb087",
	"shape_bulk":           "04d5493af3ee0084f628614a507e46c4 7cb266d9cd3eaf8ec83e1b0cfa54b0bf",
	"shape_call_indirect":  "bb647f8444e330f7e26d17810a07762e 18729de3d8d8f3cd5c1d1915dd534d83",
	"shape_huge_body":      "e01cbfbb594707722fcbb3e3a537383d e367ba78a66fbad39e7f8a233d1a2845",
	"shape_loop_br":        "93436c366a003e1123d54bfc9c85f4be 260588384139eef6423ba58d908db7fd",
	"shape_mutual":         "e447d4e66eddc4bf9a0f75799576d7c4 9701944a3efcfab65aa1620e569b4d20",
	"shape_nested_loops":   "65fdd95a041bb950fb874de97d306daf 9832221d6ac1c920748fd04ffbe1db7b",
	"shape_random":         "6b0f9990ae3f28a35f88e6ca1ef0f63e 5471d262f829a10c4157d3415c8ed65a",
	"shape_recursion":      "d309dc503b1bd0f238bd9ab78f50c256 e0989009ef3db1994171cfd8115cf2b3",
	"shape_start":          "6f8d963aa88e90f0f16ef0c0f00362ae 63a4aaaabdadd700089c8662125b0d96",
	"shape_tree":           "b0c65f1d2979159ac6b2579a679d11af 1b4b8c7155b04a962b37c0ce5a5907bb",
	"shape_unrolled":       "f2386be1de5ff1a44174798383a5f2dc 189acefb781fa2919d686540d858c361",
	"sleep":                "c7e5dc5d000bd2677c340030283bf6f2 a863829553554fb6bb508da5badde117",
	"stdin":                "f64527254dfbc993deecd34205486b0f 83c6387e6827ec9a5669f6f732d94cfc",
	"stop_aware":           "2c0e4c5f81c5aff45d2e18b7ff2047b0 e4a368d13e0478eb7211cd34b871a2b8",
	"stop_ignore":          "c0ab279ce6bf24b6913cbdeeced16abe c6a291c1d2d842776db34e35c1ed8d97",
	"stopping_block":       "39be82b463b50ae538e6def7a058d69a e50a91acc9e8f1d372e9f8a1b78ef1ed",
	"stopping_fifo":        "bf99dc8f48aeb4a272dddfcd6d03a2a6 75b76f9b4237f000cd0148ca1b51bab2",
	"trap":                 "0384f2e8abeb2242cdf7439ccd77311b 5e160b8f98810852e203889b71a7fd53",
	"unknown_import":       "3f113bc8f4f5148e9c704e21c8d0e0b8 a002ab78dbb3a90b3fdc57077ea601b6",
	"unknown_module":       "c2e78b56b7b72ecceb49854d9103c6b9 e239460f13b4f236379505c905a2e008",
	"upper":                "58b8c00fe8021df9392928297e16227a d0296049ccf8d076d7db3b969db9c87e",
	"wasi_counts":          "022fbd09ddfecf09075e9997cda58ead 8103b804236ea706fa99a5af83b8d015",
	"work":                 "1d2461e830913b08efabd9a69aa05cd8 84ee1b47a549597e0c74502ba469b6e5",
	"work_arms":            "e951d649228543e1fc576a90fe6dc58c 1b9cf39d3bb52017ef253c0985101c65",
	"work_big_leaf":        "c559077b26298988a8799392bd52802a e6d93489a4e96d680f3e737d8c745f87",
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
