package shell

// The corpus of the execution oracle: hand-written seed tricks from
// testdata/oracle/seeds.txt, deterministic mutations of them, and commands
// generated from a small grammar of wrappers, builtins, programs, quoting
// styles, globs and hidden payloads.

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

// oracleLoadSeeds reads testdata/oracle/seeds.txt: one Go string literal
// per line; blank lines and lines starting with # are skipped.
func oracleLoadSeeds() ([]string, error) {
	f, err := os.Open("testdata/oracle/seeds.txt")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var seeds []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := strconv.Unquote(line)
		if err != nil {
			return nil, fmt.Errorf("seeds.txt:%d: %v: %s", n, err, line)
		}
		seeds = append(seeds, s)
	}
	return seeds, sc.Err()
}

// oracleGen generates commands deterministically from its seed.
type oracleGen struct {
	rng   *rand.Rand
	seeds []string
}

func newOracleGen(seed uint64, seeds []string) *oracleGen {
	return &oracleGen{rng: rand.New(rand.NewPCG(seed, 0x0a11ce)), seeds: seeds}
}

func (g *oracleGen) pick(list []string) string { return list[g.rng.IntN(len(list))] }
func (g *oracleGen) chance(p float64) bool     { return g.rng.Float64() < p }

// A token is either bash text (raw) or a literal value to quote.
type oracleTok struct {
	text string
	raw  bool
}

func lit(s string) oracleTok { return oracleTok{text: s} }
func raw(s string) oracleTok { return oracleTok{text: s, raw: true} }

var (
	oraclePayloads = []string{"touch pwned", "/usr/bin/touch pwned", "id", "touch pwned-$RANDOM"}
	// oracleHidden turn a payload into text that runs it when bash
	// expands it.
	oracleHidden = []string{"$(%s)", "`%s`", "${x:-$(%s)}", "${x[$(%s)]}", "$((0+$(%s)))", "<(%s)", "$'\\x24'(%s)"}
	// oracleSubscripts are literal arguments that bash evaluates as an
	// arithmetic subscript when a builtin takes them as a variable name.
	oracleSubscripts = []string{"a[$(%s)]", "a[`%s`]", "a[$(%s)+1]", "x[${y[$(%s)]}]"}
	oracleLiterals   = []string{
		"x", "-rf", "sub", "tracked.txt", "{}", ";", "-exec", "a b", "--", "-c", "-n", "1", "pwned-ok",
		"é", "\xff", "-", "args.txt", "script.sh", "./rm", "sub/rm", "~", "-e", "-x", "-v", "-a", "5",
		"", " ", "a\nb", "%s", "-p", "-i", "HEAD", ".", "/", "link/passwd",
	}
	oracleGlobs = []string{"*", "[1r]*", "-exe[c]", "?", "s*/*", "-delet[e]", "*.txt", "[a]rgs.txt", "[r]m", "-[r]f", "r?", "*/", ".*", "l*/*", "-exec*", "[-]exec", "s?b/?m"}
	// oraclePrograms are ordinary commands with a few typical arguments.
	oraclePrograms = []string{"touch", "ls", "cat", "echo", "rm", "printf", "test", "true", "id", "find", "xargs", "env", "git", "sort", "head", "stat", "mkdir", "ln", "cp", "mv", "chmod", "grep", "sed", "awk", "tar", "date", "kill", "sleep", "wc", "basename", "realpath", "tee", "dd", "install", "ssh", "make"}
	// oraclePrefixWrappers run the command that follows their words.
	oraclePrefixWrappers = [][]string{
		{"sudo"}, {"sudo", "-u", "root"}, {"sudo", "-E"}, {"sudo", "FOO=1"}, {"doas"},
		{"env"}, {"env", "-i"}, {"env", "FOO=1"}, {"env", "-u", "X"}, {"env", "--"}, {"env", "-C", "sub"},
		{"nice"}, {"nice", "-n", "1"}, {"nice", "-5"}, {"nohup"}, {"setsid"}, {"setsid", "-w"},
		{"time"}, {"time", "-p"}, {"command"}, {"exec"}, {"exec", "-a", "ls"}, {"builtin"},
		{"timeout", "5"}, {"timeout", "-s", "KILL", "5"}, {"timeout", "--foreground", "5"},
		{"xargs"}, {"xargs", "-r"}, {"xargs", "-n", "1"}, {"xargs", "-a", "args.txt"},
		{"stdbuf", "-o0"}, {"ionice", "-c3"}, {"chrt", "-o", "0"}, {"taskset", "1"}, {"flock", "lockf"},
		{"unshare"}, {"unshare", "-r"}, {"nsenter"}, {"setpriv"}, {"setpriv", "--reuid=0"},
		{"chroot", "/"}, {"runuser", "-u", "root", "--"}, {"strace", "-o", "/dev/null"}, {"ltrace"},
		{"watch", "-x"}, {"busybox"}, {"/usr/bin/env"}, {"prlimit"}, {"logsave", "/dev/null"},
		{"su", "-s", "/usr/bin/env", "root"},
	}
	// oracleScriptWrappers run a script given as one argument (%s).
	oracleScriptWrappers = [][]string{
		{"sh", "-c", "%s"}, {"bash", "-c", "%s"}, {"dash", "-c", "%s"}, {"sh", "-ec", "%s"}, {"bash", "-lc", "%s"},
		{"sh", "-c", "%s", "x"}, {"eval", "%s"}, {"su", "-c", "%s"}, {"su", "root", "-c", "%s"},
		{"runuser", "root", "-c", "%s"}, {"script", "-qc", "%s", "/dev/null"}, {"flock", "lockf", "-c", "%s"},
		{"watch", "%s"}, {"ssh", "host", "%s"}, {"sudo", "-s", "%s"}, {"sudo", "sh", "-c", "%s"},
		{"xargs", "-a", "args.txt", "sh", "-c", "%s"}, {"busybox", "sh", "-c", "%s"},
		{"git", "-c", "alias.x=!%s", "x"}, {"git", "-c", "core.pager=%s", "-p", "log"},
		{"git", "-c", "core.fsmonitor=%s", "status"}, {"git", "-c", "diff.external=%s", "diff"},
		{"git", "-c", "core.editor=%s", "commit", "--allow-empty"}, {"git", "-c", "core.sshCommand=%s", "ls-remote", "ssh://x/y"},
		{"git", "ls-remote", "--upload-pack=%s", "."}, {"git", "rebase", "--exec", "%s", "HEAD"},
		{"ssh", "-o", "ProxyCommand=%s", "host"}, {"env", "GIT_PAGER=%s", "git", "-p", "log"},
		{"env", "GIT_EXTERNAL_DIFF=%s", "git", "diff"}, {"compgen", "-C", "%s", "x"}, {"jobs", "-x", "%s"},
		{"mapfile", "-C", "%s", "x"}, {"complete", "-C", "%s", "x"}, {"trap", "%s", "EXIT"},
		{"awk", "BEGIN{system(\"%s\")}"}, {"tar", "-cf", "/dev/null", "--checkpoint=1", "--checkpoint-action=exec=%s", "tracked.txt"},
	}
	// oracleFindWrappers put the command inside find's actions.
	oracleFindWrappers = [][]string{
		{"find", ".", "-maxdepth", "0", "-exec", "%s", ";"}, {"find", ".", "-maxdepth", "0", "-execdir", "%s", ";"},
		{"find", ".", "-maxdepth", "0", "-exe[c]", "%s", ";"}, {"find", "sub", "-exec", "%s", "{}", "+"},
		{"find", ".", "-maxdepth", "0", "-ok", "%s", ";"}, {"find", "*", "-maxdepth", "0"},
	}
	// oracleBuiltinForms are builtins with %s where a subscript argument
	// goes.
	oracleBuiltinForms = [][]string{
		{"printf", "-v", "%s", "x"}, {"test", "-v", "%s"}, {"[", "-v", "%s", "]"}, {"read", "%s"}, {"read", "-a", "%s"},
		{"read", "-r", "x", "%s"}, {"mapfile", "%s"}, {"readarray", "-t", "%s"}, {"unset", "%s"}, {"unset", "-v", "%s"},
		{"getopts", "a", "%s"}, {"getopts", "a", "%s", "-a"}, {"wait", "-p", "%s"}, {"wait", "-n", "-p", "%s"}, {"let", "%s"},
		{"declare", "%s=1"}, {"typeset", "%s"}, {"local", "%s"}, {"export", "%s"}, {"readonly", "%s"},
		{"compgen", "-W", "%s", "x"}, {"compgen", "-F", "%s", "x"}, {"ulimit", "-t", "%s"}, {"printf", "%%d", "%s"},
		{"kill", "-l", "%s"}, {"shift", "%s"}, {"exit", "%s"}, {"return", "%s"}, {"cd", "%s"}, {"pushd", "%s"},
		{"umask", "%s"}, {"caller", "%s"}, {"test", "%s", "-eq", "1"}, {"[", "%s", "-lt", "1", "]"}, {"test", "-t", "%s"},
		{"printf", "-v", "%s", "%%s", "x"}, {"hash", "-p", "/usr/bin/touch", "%s"}, {"type", "%s"}, {"command", "-v", "%s"},
		{"source", "%s"}, {".", "%s"}, {"history", "-s", "%s"}, {"fc", "-e", "%s"}, {"printf", "%%(%%s)T", "%s"},
		{"echo", "%s"}, {"builtin", "printf", "-v", "%s", "x"}, {"command", "test", "-v", "%s"}, {"times", "%s"},
		{"dirs", "%s"}, {"popd", "%s"}, {"disown", "%s"}, {"suspend", "%s"}, {"enable", "%s"}, {"help", "%s"},
		{"shopt", "-s", "%s"}, {"set", "-o", "%s"}, {"alias", "%s"}, {"unalias", "%s"}, {"bind", "-x", "%s"},
		{"jobs", "-x", "%s"}, {"bg", "%s"}, {"fg", "%s"}, {"logout", "%s"}, {"break", "%s"}, {"continue", "%s"},
		{"true", "%s"}, {"false", "%s"}, {"pwd", "%s"}, {"compopt", "%s"}, {"complete", "-F", "%s", "x"},
		{":", "%s"}, {"wait", "%s"}, {"wait", "-f", "-n", "-p", "%s"}, {"kill", "-s", "%s", "0"}, {"kill", "%s"},
		{"read", "-p", "%s"}, {"read", "-t", "%s", "x"}, {"read", "-u", "%s", "x"}, {"mapfile", "-u", "%s", "x"},
		{"mapfile", "-n", "%s", "x"}, {"mapfile", "-O", "%s", "x"}, {"ulimit", "-n", "%s"}, {"history", "%s"},
		{"printf", "-v%s", "x"}, {"test", "-o", "%s"}, {"[", "-o", "%s", "]"}, {"[", "%s", "-ot", "x", "]"},
		{"test", "%s", "-ef", "x"}, {"typeset", "-n", "x=%s"}, {"exec", "-a", "%s", "true"}, {"command", "-p", "%s"},
	}
)

// payload is a random payload command.
func (g *oracleGen) payload() string { return g.pick(oraclePayloads) }

// quote renders a literal value in one of bash's quoting styles. Every
// style gives the same value; only its spelling differs.
func (g *oracleGen) quote(v string) string {
	switch g.rng.IntN(7) {
	case 0: // bare if it can be
		if v != "" && !strings.ContainsAny(v, " \t\n'\"\\$`;&|<>()*?[]{}#~=%!^,") {
			return v
		}
		fallthrough
	case 1:
		return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
	case 2:
		var b strings.Builder
		b.WriteByte('"')
		for _, c := range []byte(v) {
			if strings.IndexByte("\"\\$`", c) >= 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		b.WriteByte('"')
		return b.String()
	case 3: // backslash before every byte that needs it
		if v == "" {
			return "''"
		}
		var b strings.Builder
		for _, c := range []byte(v) {
			switch {
			case c == '\n':
				b.WriteString("'\n'")
			case c < 0x80 && !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '/' || c == '-' || c == '_'):
				b.WriteByte('\\')
				b.WriteByte(c)
			default:
				b.WriteByte(c)
			}
		}
		return b.String()
	case 4: // split in two differently quoted halves
		if len(v) < 2 {
			return "'" + v + "'"
		}
		i := 1 + g.rng.IntN(len(v)-1)
		return g.quoteNot4(v[:i]) + g.quoteNot4(v[i:])
	case 5: // ANSI-C quoting
		var b strings.Builder
		b.WriteString("$'")
		for _, c := range []byte(v) {
			if c < 0x20 || c >= 0x7f || c == '\'' || c == '\\' || g.chance(0.2) {
				fmt.Fprintf(&b, "\\x%02x", c)
			} else {
				b.WriteByte(c)
			}
		}
		b.WriteByte('\'')
		return b.String()
	default: // double quotes with a line continuation inside
		q := g.quoteNot4(v)
		if strings.HasPrefix(q, "\"") && len(q) > 2 {
			i := 1 + g.rng.IntN(len(q)-2)
			return q[:i] + "\\\n" + q[i:]
		}
		return q
	}
}

func (g *oracleGen) quoteNot4(v string) string {
	for {
		q := g.quote(v)
		if q != "" {
			return q
		}
	}
}

// render joins tokens into command text.
func (g *oracleGen) render(toks []oracleTok) string {
	parts := make([]string, len(toks))
	for i, t := range toks {
		if t.raw {
			parts[i] = t.text
		} else {
			parts[i] = g.quote(t.text)
		}
	}
	sep := " "
	if g.chance(0.1) {
		sep = " \\\n "
	}
	return strings.Join(parts, sep)
}

// arg is one random argument.
func (g *oracleGen) arg() oracleTok {
	switch g.rng.IntN(6) {
	case 0, 1:
		return lit(g.pick(oracleLiterals))
	case 2:
		return raw(g.pick(oracleGlobs))
	case 3:
		return raw(fmt.Sprintf(g.pick(oracleHidden), g.payload()))
	case 4:
		return lit(fmt.Sprintf(g.pick(oracleSubscripts), g.payload()))
	default:
		return lit(fmt.Sprintf(g.pick(oracleHidden), g.payload()))
	}
}

// core is the innermost command: a builtin with a subscript argument, or a
// program with arguments, or a seed.
func (g *oracleGen) core() []oracleTok {
	switch g.rng.IntN(4) {
	case 0:
		form := g.pick2(oracleBuiltinForms)
		sub := fmt.Sprintf(g.pick(oracleSubscripts), g.payload())
		if g.chance(0.3) {
			sub = fmt.Sprintf(g.pick(oracleHidden), g.payload())
		}
		return g.fill(form, sub)
	case 1:
		if len(g.seeds) > 0 {
			return []oracleTok{raw(g.pick(g.seeds))}
		}
		fallthrough
	default:
		toks := []oracleTok{lit(g.pick(oraclePrograms))}
		for range g.rng.IntN(4) {
			toks = append(toks, g.arg())
		}
		return toks
	}
}

func (g *oracleGen) pick2(list [][]string) []string { return list[g.rng.IntN(len(list))] }

// fill turns a form into tokens, putting value where %s is.
func (g *oracleGen) fill(form []string, value string) []oracleTok {
	toks := make([]oracleTok, 0, len(form))
	for _, w := range form {
		switch {
		case w == "%s":
			toks = append(toks, lit(value))
		case strings.Contains(w, "%s"):
			toks = append(toks, lit(strings.Replace(w, "%s", value, 1)))
		case strings.ContainsAny(w, "*?[") && w != "[":
			toks = append(toks, raw(w))
		default:
			toks = append(toks, lit(strings.ReplaceAll(w, "%%", "%")))
		}
	}
	return toks
}

// Command returns one generated command: a core wrapped in up to three
// wrappers, then possibly mutated.
func (g *oracleGen) Command() string {
	toks := g.core()
	for range g.rng.IntN(4) {
		switch g.rng.IntN(3) {
		case 0:
			w := g.pick2(oraclePrefixWrappers)
			pre := make([]oracleTok, len(w))
			for i, x := range w {
				pre[i] = lit(x)
			}
			toks = append(pre, toks...)
		case 1:
			toks = g.fill(g.pick2(oracleScriptWrappers), g.render(toks))
		default:
			form := g.pick2(oracleFindWrappers)
			var out []oracleTok
			for _, w := range form {
				if w == "%s" {
					out = append(out, toks...)
				} else if strings.ContainsAny(w, "*?[") {
					out = append(out, raw(w))
				} else {
					out = append(out, lit(w))
				}
			}
			toks = out
		}
	}
	s := g.render(toks)
	if g.chance(0.3) {
		s = g.Mutate(s)
	}
	return s
}

// oracleOdd are characters that read differently in some shells,
// terminals or locales.
var oracleOdd = []string{"\u00a0", "\u2028", "\u202e", "\u200b", "\x01", "\xff", "\xa1", "\x81", "\v", "\f", "\t", "\r", "é", "\\\n", "$", "\\", "'", "\"", "`", " ", "[", "]", "*", "{", "}", ",", "\n"}

// Mutate applies one to three random edits to s.
func (g *oracleGen) Mutate(s string) string {
	for range 1 + g.rng.IntN(3) {
		if s == "" {
			s = "x"
		}
		i := g.rng.IntN(len(s) + 1)
		switch g.rng.IntN(9) {
		case 0, 1: // a line continuation anywhere
			s = s[:i] + "\\\n" + s[i:]
		case 2: // a line continuation after a $
			if j := strings.IndexByte(s[i%len(s):], '$'); j >= 0 {
				k := i%len(s) + j + 1
				s = s[:k] + "\\\n" + s[k:]
			} else {
				s = s[:i] + "$\\\n(" + g.payload() + ")" + s[i:]
			}
		case 3: // an odd character
			s = s[:i] + g.pick(oracleOdd) + s[i:]
		case 4: // glob one letter
			for j := i; j < len(s); j++ {
				if c := s[j]; c >= 'a' && c <= 'z' {
					s = s[:j] + "[" + string(c) + "]" + s[j+1:]
					break
				}
			}
		case 5: // swap a quote
			for j := i; j < len(s); j++ {
				if s[j] == '\'' {
					s = s[:j] + "\"" + s[j+1:]
					break
				}
				if s[j] == '"' {
					s = s[:j] + "'" + s[j+1:]
					break
				}
			}
		case 6: // drop a byte
			if i < len(s) {
				s = s[:i] + s[i+1:]
			}
		case 7: // a wrapper around everything
			w := g.pick2(oracleScriptWrappers)
			s = g.render(g.fill(w, s))
		default: // a hidden payload spliced in
			s = s[:i] + fmt.Sprintf(g.pick(oracleHidden), g.payload()) + s[i:]
		}
	}
	return s
}
