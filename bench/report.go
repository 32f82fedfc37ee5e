package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

type targetInfo struct {
	Name    string `json:"name"`
	URL     string `json:"url"`
	PID     int    `json:"pid,omitempty"`
	Spawned bool   `json:"spawned,omitempty"`
}

// result is one measurement: one scenario, one target, one round.
type result struct {
	Scenario    string   `json:"scenario"`
	Target      string   `json:"target"`
	Round       int      `json:"round"`
	Figures     []figure `json:"figures,omitempty"`
	TimedS      float64  `json:"timed_s"`
	ServerCores float64  `json:"server_cores,omitempty"` // server CPU s / timed s
	ClientCores float64  `json:"client_cores"`           // this harness's CPU s / timed s
	ServerRSS   float64  `json:"server_peak_rss_mib,omitempty"`
	Unsupported string   `json:"unsupported,omitempty"`
	Error       string   `json:"error,omitempty"`
}

type peakRSS struct {
	Target string  `json:"target"`
	MiB    float64 `json:"mib"`
}

type report struct {
	Machine  machine      `json:"machine"`
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
	Args     []string     `json:"args"`
	Targets  []targetInfo `json:"targets"`
	Limits   []limit      `json:"limits,omitempty"`
	Results  []result     `json:"results"`
	PeakRSS  []peakRSS    `json:"peak_rss_whole_run,omitempty"`
}

// runScenarios runs scenario by scenario; within one, round by round, the
// targets in turn, starting one later each round (A B C, B C A, ...), so a
// drift of the machine's speed hits every target alike. A target that does
// not support a scenario is skipped for its remaining rounds.
func runScenarios(ctx context.Context, c *config, fx *fixtures, targets []*target, rep *report, prog *progress) error {
	state := map[string]map[string]any{}
	for _, t := range targets {
		state[t.name] = map[string]any{}
	}
	failed := false
	for _, name := range c.scenarios {
		sc := scenarios[slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == name })]
		skip := map[string]bool{}
		for r := 0; r < c.rounds; r++ {
			for k := range targets {
				t := targets[(k+r)%len(targets)]
				if skip[t.name] {
					continue
				}
				if !t.alive() {
					return fmt.Errorf("%s exited:\n%s", t.name, t.log.String())
				}
				prog.begin(fmt.Sprintf("%s %s round %d/%d", sc.name, t.name, r+1, c.rounds))
				t.closeIdle()
				m := newMeter(t.pid)
				e := &env{ctx: ctx, c: c, fx: fx, t: t, round: r, prog: prog, m: m, state: state[t.name]}
				figs, err := sc.run(e)
				m.close()
				if ctx.Err() != nil {
					return ctx.Err()
				}
				res := result{Scenario: sc.name, Target: t.name, Round: r + 1, Figures: figs, TimedS: m.wall}
				if m.wall > 0 {
					res.ClientCores = m.cli / m.wall
					if t.pid > 0 {
						res.ServerCores = m.srv / m.wall
					}
				}
				res.ServerRSS = float64(m.peak.Load()) / 1000
				var un *errUnsupported
				switch {
				case errors.As(err, &un):
					res.Unsupported = un.why
					skip[t.name] = true
					prog.logf("%s on %s: unsupported (%s)", sc.name, t.name, un.why)
				case err != nil:
					res.Error = err.Error()
					failed = true
					prog.logf("%s on %s round %d: FAILED: %v", sc.name, t.name, r+1, err)
				}
				rep.Results = append(rep.Results, res)
			}
		}
	}
	if failed {
		return errors.New("some measurements failed (see the report)")
	}
	return nil
}

func (r *report) writeJSON(w io.Writer) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(r)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func num(v float64) string {
	switch a := abs(v); {
	case a == 0:
		return "0"
	case v == float64(int64(v)):
		return fmt.Sprintf("%d", int64(v))
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// writeTable prints per scenario and figure the median over the rounds with
// (min-max) for each target, then the first target's advantage over each
// other one: >1 means the first target is better (faster, or lower
// latency).
func (r *report) writeTable(w io.Writer, c *config) {
	m := r.Machine
	fmt.Fprintf(w, "\nhoard bench  %s  %d rounds x %s per measurement\n", r.Started.UTC().Format(time.RFC3339), c.rounds, c.duration)
	fmt.Fprintf(w, "machine: %d CPUs %s, kernel %s, %s, %d MiB RAM, load at start %s\n", m.CPUs, m.Model, m.Kernel, m.Go, m.MemMiB, m.LoadAvg)
	var names []string
	for _, t := range r.Targets {
		names = append(names, t.Name)
		fmt.Fprintf(w, "target %s: %s", t.Name, t.URL)
		if t.Spawned {
			fmt.Fprint(w, " (spawned)")
		}
		if t.PID > 0 {
			fmt.Fprintf(w, " pid %d", t.PID)
		}
		fmt.Fprintln(w)
	}
	if len(r.Limits) > 0 {
		fmt.Fprintln(w, "\nmachine limits (no HTTP server involved):")
		for _, l := range r.Limits {
			fmt.Fprintf(w, "  %-62s %8s %s\n", l.Name, num(l.Value), l.Unit)
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	hdr, sep := "| scenario\t| figure\t| unit\t", "|---\t|---\t|---\t"
	for _, n := range names {
		hdr += "| " + n + "\t"
		sep += "|--:\t"
	}
	for _, n := range names[1:] {
		hdr += "| " + names[0] + " vs " + n + "\t"
		sep += "|--:\t"
	}
	fmt.Fprintln(tw, hdr+"|")
	fmt.Fprintln(tw, sep+"|")
	var notes []string
	for _, sc := range c.scenarios {
		type row struct {
			name, unit string
			lower      bool
			vals       map[string][]float64
		}
		var rows []*row
		get := func(name, unit string, lower bool) *row {
			for _, x := range rows {
				if x.name == name {
					return x
				}
			}
			x := &row{name: name, unit: unit, lower: lower, vals: map[string][]float64{}}
			rows = append(rows, x)
			return x
		}
		status := map[string]string{}
		for _, res := range r.Results {
			if res.Scenario != sc {
				continue
			}
			switch {
			case res.Unsupported != "":
				status[res.Target] = "unsupported"
				notes = append(notes, fmt.Sprintf("%s on %s: unsupported: %s", sc, res.Target, res.Unsupported))
				continue
			case res.Error != "":
				status[res.Target] = "FAILED"
				notes = append(notes, fmt.Sprintf("%s on %s round %d: %s", sc, res.Target, res.Round, res.Error))
				continue
			}
			for _, f := range res.Figures {
				x := get(f.Name, f.Unit, f.Lower)
				x.vals[res.Target] = append(x.vals[res.Target], f.Value)
			}
			x := get("harness CPU", "cores", true)
			x.vals[res.Target] = append(x.vals[res.Target], res.ClientCores)
			if res.ServerRSS > 0 {
				x := get("server CPU", "cores", true)
				x.vals[res.Target] = append(x.vals[res.Target], res.ServerCores)
				x = get("server peak RSS", "MiB", true)
				x.vals[res.Target] = append(x.vals[res.Target], res.ServerRSS)
			}
		}
		if len(rows) == 0 {
			line := "| " + sc + "\t| \t| \t"
			for _, n := range names {
				line += "| " + orDash(status[n]) + "\t"
			}
			for range names[1:] {
				line += "| \t"
			}
			fmt.Fprintln(tw, line+"|")
			continue
		}
		for i, x := range rows {
			line := "| "
			if i == 0 {
				line += sc
			}
			line += "\t| " + x.name + "\t| " + x.unit + "\t"
			meds := map[string]float64{}
			for _, n := range names {
				v := x.vals[n]
				switch {
				case len(v) == 0:
					line += "| " + orDash(status[n]) + "\t"
				case len(v) == 1:
					meds[n] = v[0]
					line += "| " + num(v[0]) + "\t"
				default:
					meds[n] = median(v)
					line += fmt.Sprintf("| %s (%s–%s)\t", num(meds[n]), num(slices.Min(v)), num(slices.Max(v)))
				}
			}
			for _, n := range names[1:] {
				a, okA := meds[names[0]]
				b, okB := meds[n]
				switch {
				case !okA || !okB || a <= 0 || b <= 0 || x.unit == "hits" || x.unit == "count" || x.unit == "cores" || x.unit == "MiB":
					line += "| \t"
				case x.lower:
					line += fmt.Sprintf("| %.2f×\t", b/a)
				default:
					line += fmt.Sprintf("| %.2f×\t", a/b)
				}
			}
			fmt.Fprintln(tw, line+"|")
		}
	}
	tw.Flush()
	if len(names) > 1 {
		fmt.Fprintf(w, "\nratio columns: how much better %s is (>1: faster, or lower latency); median of each target's rounds\n", names[0])
	}
	fmt.Fprintln(w, "cells: median (min–max) over rounds; MB = 10^6 bytes; cores = CPU seconds per second of timed work")
	if len(r.PeakRSS) > 0 {
		var s []string
		for _, p := range r.PeakRSS {
			s = append(s, fmt.Sprintf("%s %.0f MiB", p.Target, p.MiB))
		}
		fmt.Fprintf(w, "peak RSS over the whole run (VmHWM, process tree): %s\n", strings.Join(s, ", "))
	}
	for _, n := range notes {
		fmt.Fprintln(w, "note:", n)
	}
	fmt.Fprintf(w, "took %s\n", r.Finished.Sub(r.Started).Round(time.Second))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
