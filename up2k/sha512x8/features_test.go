package sha512x8

import (
	"bufio"
	"bytes"
	"crypto/sha512"
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// extensionOf names the x86-64 extension of each instruction the kernel
// may use, in the forms it uses them: on 512-bit (Z) registers, which
// TestKernelNeeds checks. "" is the amd64 baseline. An instruction not
// listed fails the test until it is added here with its extension.
var extensionOf = map[string]string{
	"MOVQ": "", "MOVBQZX": "", "ADDQ": "", "DECQ": "", "TESTQ": "", "JZ": "", "JNZ": "", "RET": "",
	"VZEROUPPER": "AVX",
	"VMOVDQU64":  "AVX512F", "VMOVDQA64": "AVX512F", "VPADDQ": "AVX512F", "VPRORQ": "AVX512F",
	"VPSRLQ": "AVX512F", "VPTERNLOGQ": "AVX512F", "VPUNPCKLQDQ": "AVX512F", "VPUNPCKHQDQ": "AVX512F",
	"VSHUFI64X2": "AVX512F",
	"VPSHUFB":    "AVX512BW", // on Z registers; on X/Y it would be SSSE3/AVX2
	"KMOVB":      "AVX512DQ", // KMOVW would be AVX512F
	"KMOVW":      "AVX512F",
	"KMOVQ":      "AVX512BW", "KMOVD": "AVX512BW",
}

// TestKernelNeeds reads every instruction of blocks_amd64.s and checks
// that kernelNeeds (what the CPU check asks for) is exactly the set of
// extensions they belong to: an instruction of an extension the check
// does not ask for would fault on a CPU without it instead of falling
// back (KMOVB, AVX512DQ, was once missed this way).
func TestKernelNeeds(t *testing.T) {
	f, err := os.Open("blocks_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	narrow := regexp.MustCompile(`\b[XY]\d+\b`)
	used := map[string]bool{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "#") || strings.HasSuffix(s, ":") {
			continue
		}
		mn, _, _ := strings.Cut(strings.Fields(s)[0], ".") // VPADDQ.BCST is VPADDQ
		switch mn {
		case "DATA", "GLOBL", "TEXT":
			continue
		}
		ext, ok := extensionOf[mn]
		if !ok {
			t.Errorf("line %d: %s: which extension? Add it to extensionOf (and to kernelNeeds if it is new)", line, mn)
			continue
		}
		if strings.HasPrefix(mn, "V") && narrow.MatchString(s) {
			t.Errorf("line %d: %q uses an X or Y register; extensionOf assumes the 512-bit forms", line, s)
		}
		if ext != "" {
			used[ext] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for ext := range used {
		if !slices.Contains(kernelNeeds, ext) {
			t.Errorf("the kernel uses %s instructions, but kernelNeeds does not ask the CPU for %s", ext, ext)
		}
	}
	for _, ext := range kernelNeeds {
		if !used[ext] {
			t.Errorf("kernelNeeds asks for %s, which no instruction of the kernel uses", ext)
		}
	}
}

// TestKernelRuns: the kernel runs only when every needed extension is
// there; without any single one of them the lanes fall back to Go.
func TestKernelRuns(t *testing.T) {
	all := map[string]bool{}
	for _, n := range kernelNeeds {
		all[n] = true
	}
	if !kernelRuns(all) {
		t.Fatal("the kernel does not run with every extension it needs")
	}
	for _, n := range kernelNeeds {
		without := map[string]bool{}
		for _, m := range kernelNeeds {
			without[m] = m != n
		}
		if kernelRuns(without) {
			t.Errorf("the kernel runs without %s", n)
		}
	}
	if kernelBuilt {
		for _, n := range kernelNeeds {
			if _, ok := cpuHas[n]; !ok {
				t.Errorf("cpuHas does not look for %s, so the kernel never runs", n)
			}
		}
	}
}

// TestFallbackWithoutExtension runs this test binary again with one
// extension turned off (x/sys/cpu honours GODEBUG=cpu.X=off), as on a CPU
// without it: the lanes must be off and sums still right.
func TestFallbackWithoutExtension(t *testing.T) {
	if os.Getenv("SHA512X8_CHILD") != "" {
		t.Skip("child run")
	}
	if !haveKernel {
		t.Skip("the kernel does not run here anyway")
	}
	// The first run, with nothing turned off, shows the child's report
	// can say true; then each extension (and DQ by name, whatever
	// kernelNeeds says) is turned off in turn.
	for _, ext := range append([]string{"", "AVX512DQ"}, kernelNeeds...) {
		name, want, env := ext, "lanes=false sum=ok", "GODEBUG=cpu."+strings.ToLower(ext)+"=off"
		if ext == "" {
			name, want, env = "none", "lanes=true sum=ok", "GODEBUG="
		}
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestChildReport$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "SHA512X8_CHILD=1", env)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if !bytes.Contains(out, []byte(want)) {
				t.Fatalf("with %s the child should report %q; it says:\n%s", env, want, out)
			}
		})
	}
}

// TestChildReport is TestFallbackWithoutExtension's child: it says
// whether the kernel is in use and whether a Hasher's sum is right.
func TestChildReport(t *testing.T) {
	if os.Getenv("SHA512X8_CHILD") == "" {
		t.Skip("run by TestFallbackWithoutExtension")
	}
	h := NewHasher()
	defer h.Close()
	msg := bytes.Repeat([]byte("hoard"), 100_000)
	s := h.New()
	s.Write(msg, nil)
	s.Finish()
	sum := "bad"
	if s.Sum() == sha512.Sum512(msg) {
		sum = "ok"
	}
	fmt.Printf("lanes=%v sum=%s\n", Available(), sum)
}

// TestGenerated regenerates the kernel with gen.go and fails when the
// committed blocks_amd64.s differs (run go generate and commit both).
func TestGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and runs gen.go")
	}
	goTool := filepath.Join(build.Default.GOROOT, "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			t.Skip("no go tool here")
		}
	}
	want, err := exec.Command(goTool, "run", "gen.go").Output()
	if err != nil {
		t.Fatalf("go run gen.go: %v", err)
	}
	have, err := os.ReadFile("blocks_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		hl, wl := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(hl), len(wl)) {
			if hl[i] != wl[i] {
				t.Fatalf("blocks_amd64.s is stale (run go generate ./up2k/sha512x8): line %d is %q, gen.go writes %q", i+1, hl[i], wl[i])
			}
		}
		t.Fatalf("blocks_amd64.s is stale (run go generate ./up2k/sha512x8): %d lines, gen.go writes %d", len(hl), len(wl))
	}
}
