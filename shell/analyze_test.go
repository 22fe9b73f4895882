package shell_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/shell"
)

// ok builds the expected Commands of a simple command.
func ok(cmds ...string) []string { return cmds }

var analyzeTests = []struct {
	name    string
	in      string
	problem string   // substring of Problem; "" means Simple
	cmds    []string // exact Commands when Simple
}{
	// Plain commands and normalization.
	{"plain", "git log --oneline -n 5", "", ok("git log --oneline -n 5")},
	{"single word", "ls", "", ok("ls")},
	{"absolute path", "/bin/rm -rf /", "", ok("rm -rf /")},
	{"relative path", "./x --flag", "", ok("x --flag")},
	{"parent path", "../bin/x a/b", "", ok("x a/b")},
	{"args keep paths", "cp /etc/passwd ./x/y", "", ok("cp /etc/passwd ./x/y")},
	{"extra spaces", "rm   -rf    /", "", ok("rm -rf /")},
	{"tabs", "rm\t-rf\t/", "", ok("rm -rf /")},
	{"leading and trailing blanks", "  \t ls -l \t ", "", ok("ls -l")},
	{"case preserved", "Git Status -S", "", ok("Git Status -S")},
	{"tilde literal", "ls ~ ~/x", "", ok("ls ~ ~/x")},
	{"argument glob", "rm ./*.txt", "", ok("rm ./*.txt")},
	{"argument glob after dashdash", "rm -- *.txt", "", ok("rm -- *.txt")},
	{"argument glob that can be an option", "rm *.txt", "glob that can expand to an option", nil},
	{"argument question glob", "ls file?.go -- [ab]*", "", ok("ls file?.go -- [ab]*")},
	{"test bracket command", "[ -f x ]", "", ok("[ -f x ]")},
	{"find placeholder", "echo {} x", "", ok("echo {} x")},
	{"reflog brace", "git show stash@{0}", "", ok("git show stash@{0}")},
	{"lone dollar", "echo $", "", ok("echo $")},
	{"hash inside word", "echo a#b", "", ok("echo a#b")},
	{"escaped hash", "echo \\#x", "", ok("echo #x")},
	{"line continuation", "echo a \\\n  b", "", ok("echo a b")},
	{"continuation inside word", "r\\\nm x", "", ok("rm x")},
	{"trailing continuation", "ls \\\n", "", ok("ls")},
	{"unicode", "echo héllo 世界", "", ok("echo héllo 世界")},
	{"equals in argument", "echo a=b", "", ok("echo a=b")},
	{"double dash", "rm -rf -- /", "", ok("rm -rf -- /")},

	// Quoting.
	{"single quotes", "echo 'hello world'", "", ok("echo hello world")},
	{"double quotes", `echo "hello world"`, "", ok("echo hello world")},
	{"pipe in single quotes", "echo 'a|b'", "", ok("echo a|b")},
	{"semicolon in double quotes", `echo "x;y"`, "", ok("echo x;y")},
	{"and-and in double quotes", `grep "a && b" f`, "", ok("grep a && b f")},
	{"substitution in single quotes", "echo '$(rm -rf /)'", "", ok("echo $(rm -rf /)")},
	{"backticks in single quotes", "echo '`id`'", "", ok("echo `id`")},
	{"escaped operators", `echo a\;b \| c\&\&d`, "", ok("echo a;b | c&&d")},
	{"escaped dollar", `echo \$HOME`, "", ok("echo $HOME")},
	{"escaped command name", `r\m -rf /`, "", ok("rm -rf /")},
	{"quoted command name", `"rm" -rf /`, "", ok("rm -rf /")},
	{"split quoted command name", `r"m" -r'f' /`, "", ok("rm -rf /")},
	{"double quote escapes", `echo "a\"b\\c\$d\x\e"`, "", ok(`echo a"b\c$d\x\e`)},
	{"single quote keeps backslash", `echo 'a\nb'`, "", ok(`echo a\nb`)},
	{"newline in single quotes", "echo 'a\nb'", "", ok("echo a b")},
	{"newline in double quotes", "echo \"a\nb\"", "", ok("echo a b")},
	{"continuation in double quotes", "echo \"a\\\nb\"", "", ok("echo ab")},
	{"spaces inside quotes folded", `echo "a   b"`, "", ok("echo a b")},
	{"empty argument dropped", `rm '' -rf "" /`, "", ok("rm -rf /")},
	{"blank argument dropped", `rm "  " -rf " /"`, "", ok("rm -rf /")},
	{"trailing backslash", `echo a\`, "trailing backslash", nil},
	{"trailing backslash after quoted newline", "echo '\n'a\\", "trailing backslash", nil},
	{"escaped trailing backslash", `echo a\\`, "", ok(`echo a\`)},
	{"carriage return", "rm\r -rf /", "carriage return", nil},
	{"quoted carriage return", "echo 'a\rb'", "carriage return", nil},
	{"backslash after non-ASCII", `echo "世\"; rm -rf /; echo "`, "backslash after a non-ASCII character", nil},
	{"non-ASCII then escaped space", `ls é\ x`, "backslash after a non-ASCII character", nil},
	{"backslash before non-ASCII", `echo \é x\é`, "", ok("echo é xé")},
	{"quoted glob command name", `'/???/r?' x`, "", ok("r? x")},
	{"quoted brace", `echo '{a,b}' "{c,d}"`, "", ok("echo {a,b} {c,d}")},
	{"escaped brace", `echo \{a,b}`, "", ok("echo {a,b}")},
	{"escaped comma", `echo {a\,b}`, "", ok("echo {a,b}")},

	// Control operators and separators.
	{"semicolon", "echo hi; rm -rf /", "control operator ';'", nil},
	{"trailing semicolon", "ls;", "control operator ';'", nil},
	{"and", "make && rm -rf /", "control operator '&&'", nil},
	{"or", "false || rm -rf /", "control operator '||'", nil},
	{"pipe", "cat x | sh", "pipe '|'", nil},
	{"pipe all", "cat x |& sh", "pipe '|&'", nil},
	{"background", "sleep 1 &", "control operator '&'", nil},
	{"background then command", "sleep 1 & rm -rf /", "control operator '&'", nil},
	{"newline", "echo hi\nrm -rf /", "newline", nil},
	{"crlf", "echo hi\r\nrm -rf /", "carriage return", nil},
	{"trailing newline", "ls\n", "newline", nil},
	{"escaped backslash then newline", "echo a\\\\\nrm x", "newline", nil},
	{"single-quoted backslash then newline", "echo 'a\\'\n", "newline", nil},
	{"negation", "! rm x", "negation", nil},
	{"double semicolon", "a;;", "parse error", nil},

	// Substitutions and expansions.
	{"command substitution", "echo $(rm -rf /)", "command substitution", nil},
	{"backticks", "echo `rm -rf /`", "command substitution", nil},
	{"substitution in double quotes", `echo "$(id)"`, "command substitution", nil},
	{"backticks in double quotes", "echo \"`id`\"", "command substitution", nil},
	{"substitution as command", "$(echo rm) -rf /", "command substitution", nil},
	{"process substitution in", "diff <(ls a) b", "process substitution", nil},
	{"process substitution out", "tee >(sh)", "process substitution", nil},
	{"parameter", "echo $HOME", "parameter expansion", nil},
	{"braced parameter", "rm -rf ${DIR}/", "parameter expansion", nil},
	{"parameter in double quotes", `echo "$HOME"`, "parameter expansion", nil},
	{"parameter as command", "$CMD x", "parameter expansion", nil},
	{"IFS trick", "rm${IFS}-rf${IFS}/", "parameter expansion", nil},
	{"arithmetic expansion", "echo $((1+2))", "arithmetic expansion", nil},
	{"ansi-c quoting", `echo $'\x72m'`, "ANSI-C quoting", nil},
	{"locale quoting", `echo $"x"`, "locale quoting", nil},
	{"extended glob", "ls !(x)", "extended glob", nil},

	// Brace expansion and globs in command names.
	{"brace expansion command", "{rm,-rf,/}", "brace expansion", nil},
	{"brace expansion argument", "echo {a,b}", "brace expansion", nil},
	{"brace sequence", "touch f{1..3}", "brace expansion", nil},
	{"brace letter sequence", "echo {a..c}", "brace expansion", nil},
	{"brace with quoted part", `echo {"a",b}`, "brace expansion", nil},
	{"nested brace", "echo x{a,{b,c}}", "brace expansion", nil},
	{"glob command", "/???/r? -rf /", "glob in command name", nil},
	{"star command", "/bin/r* -rf /", "glob in command name", nil},
	{"bracket command", "/bin/[r]m x", "glob in command name", nil},
	{"glob in wrapped command", "sudo /bin/r? x", "glob in an argument of 'sudo'", nil},
	{"glob in find exec command", `find . -exec /bin/r* {} \;`, "glob in an argument of 'find'", nil},

	// Redirections and here-documents.
	{"redirect out", "echo hi > /etc/passwd", "redirection '>'", nil},
	{"redirect clobber", "echo hi >| x", "redirection '>|'", nil},
	{"redirect append", "echo hi >> x", "redirection", nil},
	{"redirect in", "sh < x", "redirection", nil},
	{"redirect fd", "make 2>&1", "redirection", nil},
	{"redirect all", "make &> log", "redirection", nil},
	{"redirect first", "> x echo hi", "redirection", nil},
	{"here-string", "bash <<< 'rm -rf /'", "redirection '<<<' (here-string)", nil},
	{"here-document", "cat <<EOF\nhi\nEOF", "here-document '<<'", nil},
	{"here-document dash", "cat <<-EOF\n\thi\n\tEOF", "here-document", nil},
	{"unclosed here-document", "cat <<EOF", "parse error", nil},

	// Assignments.
	{"assignment before command", "FOO=1 cmd", "assignment before the command", nil},
	{"path assignment", "PATH=/tmp ls", "assignment before the command", nil},
	{"bare assignment", "FOO=1", "assignment", nil},
	{"array assignment", "a=(x y)", "assignment", nil},
	{"export", "export FOO=1", "declaration clause", nil},
	{"declare", "declare -x a", "declaration clause", nil},
	{"let", "let x=1", "let clause", nil},

	// Compound commands.
	{"subshell", "(rm -rf /)", "subshell", nil},
	{"group", "{ rm -rf /; }", "command group", nil},
	{"test clause", "[[ -f x ]]", "test clause", nil},
	{"arithmetic command", "((x++))", "arithmetic command", nil},
	{"if", "if true; then rm x; fi", "if clause", nil},
	{"for", "for f in *; do rm $f; done", "for loop", nil},
	{"while", "while true; do :; done", "while loop", nil},
	{"until", "until false; do :; done", "until loop", nil},
	{"case", "case x in x) rm y;; esac", "case clause", nil},
	{"function", "f() { rm x; }", "function declaration", nil},
	{"coproc", "coproc rm x", "coprocess", nil},
	{"select", "select x in a; do b; done", "select loop", nil},

	// Comments, empty input and odd names.
	{"comment", "echo hi # rm -rf /", "comment", nil},
	{"only comment", "# hello", "comment", nil},
	{"empty", "", "empty command", nil},
	{"blank", " \t ", "empty command", nil},
	{"only newline", "\n", "empty command", nil},
	{"empty command name", "'' rm x", "empty command name", nil},
	{"command name with space", `"rm -rf" /`, "unusual command name", nil},
	{"directory as command", "/bin/ x", "unusual command name", nil},
	{"NUL byte", "echo a\x00b", "NUL byte", nil},
	{"unclosed quote", "echo 'abc", "parse error", nil},
	{"lone brace", "{", "parse error", nil},

	// Wrappers.
	{"sudo", "sudo rm -rf /", "", ok("sudo rm -rf /", "rm -rf /")},
	{"sudo path", "/usr/bin/sudo /bin/rm x", "", ok("sudo /bin/rm x", "rm x")},
	{"sudo options", "sudo -u root -E -H rm x", "", ok("sudo -u root -E -H rm x", "rm x")},
	{"sudo attached value", "sudo -uroot -gwheel rm x", "", ok("sudo -uroot -gwheel rm x", "rm x")},
	{"sudo cluster value", "sudo -nu root rm x", "", ok("sudo -nu root rm x", "rm x")},
	{"sudo long options", "sudo --user=root --group wheel --preserve-env rm x", "", ok("sudo --user=root --group wheel --preserve-env rm x", "rm x")},
	{"sudo long prefix", "sudo --us root rm x", "", ok("sudo --us root rm x", "rm x")},
	{"sudo double dash", "sudo -- rm x", "", ok("sudo -- rm x", "rm x")},
	{"sudo env vars", "sudo LANG=C -u root TZ=UTC rm x", "", ok("sudo LANG=C -u root TZ=UTC rm x", "rm x")},
	{"sudo env var refused", "sudo LANG=C -u root LD_PRELOAD=/tmp/x.so rm x", "sudo sets environment variable 'LD_PRELOAD'", nil},
	{"sudo value options", "sudo -C 3 -D /tmp -h host -p pw -T 5 rm x", "", ok("sudo -C 3 -D /tmp -h host -p pw -T 5 rm x", "rm x")},
	{"sudo shell", "sudo -s", "sudo -s or -i without a command starts a shell", nil},
	{"sudo login", "sudo -i -u bob", "sudo -s or -i without a command starts a shell", nil},
	{"sudo shell command", "sudo -s rm x", "", ok("sudo -s rm x", "rm x")},
	{"sudo shell bad command", "sudo -i 'rm x; y'", "in sudo shell command: control operator ';'", nil},
	{"sudo edit", "sudo -e /etc/hosts", "", ok("sudo -e /etc/hosts")},
	{"sudo nothing", "sudo", "", ok("sudo")},
	{"doas", "doas -u root rm x", "", ok("doas -u root rm x", "rm x")},
	{"doas config", "doas -C /etc/doas.conf rm x", "", ok("doas -C /etc/doas.conf rm x", "rm x")},
	{"env", "env rm x", "", ok("env rm x", "rm x")},
	{"env assignments", "env LC_ALL=C TZ=UTC rm x", "", ok("env LC_ALL=C TZ=UTC rm x", "rm x")},
	{"env assignment refused", "env LC_ALL=C PATH=/tmp rm x", "env sets environment variable 'PATH'", nil},
	{"env options", "env -i -u HOME -C /tmp --unset=X --chdir=/ -0 -v rm x", "", ok("env -i -u HOME -C /tmp --unset=X --chdir=/ -0 -v rm x", "rm x")},
	{"env dash", "env - LANG=C rm x", "", ok("env - LANG=C rm x", "rm x")},
	{"env print", "env", "", ok("env")},
	{"env -S", "env -S 'rm -rf /'", "env -S cannot be analyzed", nil},
	{"env -S cluster", "env -iS'rm x'", "env -S cannot be analyzed", nil},
	{"env split-string", "env --split-string=x", "env -S cannot be analyzed", nil},
	{"command", "command rm x", "", ok("command rm x", "rm x")},
	{"command options", "command -pv rm", "", ok("command -pv rm", "rm")},
	{"builtin", "builtin echo x", "", ok("builtin echo x", "echo x")},
	{"exec", "exec rm x", "", ok("exec rm x", "rm x")},
	{"exec options", "exec -cl rm x", "", ok("exec -cl rm x", "rm x")},
	{"exec -a", "exec -a name rm x", "exec -a (the program runs under another name)", nil},
	{"nice", "nice rm x", "", ok("nice rm x", "rm x")},
	{"nice -n", "nice -n 5 rm x", "", ok("nice -n 5 rm x", "rm x")},
	{"nice number", "nice -10 rm x", "", ok("nice -10 rm x", "rm x")},
	{"nice long", "nice --adjustment=3 rm x", "", ok("nice --adjustment=3 rm x", "rm x")},
	{"nohup", "nohup rm x", "", ok("nohup rm x", "rm x")},
	{"setsid", "setsid -f -w rm x", "", ok("setsid -f -w rm x", "rm x")},
	{"time keyword", "time rm x", "", ok("time rm x", "rm x")},
	{"time -p", "time -p rm x", "", ok("time -p rm x", "rm x")},
	{"time double dash", "time -p -- rm x", "", ok("time -p -- rm x", "rm x")},
	{"time alone", "time", "", ok("time")},
	{"time pipeline", "time rm x | sh", "pipe '|'", nil},
	{"time redirect", "time rm x > y", "redirection", nil},
	{"time assignment", "time FOO=1 rm x", "assignment before the command", nil},
	{"time command", "command time -v rm x", "", ok("command time -v rm x", "time -v rm x", "rm x")},
	{"escaped time", `\time -f %e rm x`, "", ok("time -f %e rm x", "rm x")},
	{"timeout", "timeout 5 rm x", "", ok("timeout 5 rm x", "rm x")},
	{"timeout options", "timeout -s KILL -k 1 --preserve-status --foreground -v 5s rm x", "", ok("timeout -s KILL -k 1 --preserve-status --foreground -v 5s rm x", "rm x")},
	{"timeout long", "timeout --signal=TERM --kill-after=2 5 rm x", "", ok("timeout --signal=TERM --kill-after=2 5 rm x", "rm x")},
	{"timeout no command", "timeout 5", "", ok("timeout 5")},
	{"xargs", "xargs rm -f", "xargs (its command gets words from its input", nil},
	{"xargs options", "xargs -0 -n 1 -P4 -I {} rm {}", "xargs", nil},
	{"xargs default echo", "xargs -0", "xargs", nil},
	{"xargs replaced command", "xargs -I % % --force", "xargs", nil},
	{"find exec", `find . -name '*.tmp' -exec rm {} \;`, "", ok("find . -name *.tmp -exec rm {} ;", "rm {}")},
	{"find exec plus", "find . -exec chmod 644 {} +", "", ok("find . -exec chmod 644 {} +", "chmod 644 {}")},
	{"find plus argument", "find . -exec echo + x ';'", "", ok("find . -exec echo + x ;", "echo + x")},
	{"find several", `find . -execdir rm {} \; -ok mv {} /tmp ';' -okdir ls +`, "", ok("find . -execdir rm {} ; -ok mv {} /tmp ; -okdir ls +", "rm {}", "mv {} /tmp", "ls +")},
	{"find unterminated", "find . -exec rm -rf /", "", ok("find . -exec rm -rf /", "rm -rf /")},
	{"find found file as command", `find . -exec {} \;`, "find -exec command name comes from the files found", nil},
	{"find no exec", "find . -name x -delete", "", ok("find . -name x -delete")},
	{"sh -c", "sh -c 'rm -rf /'", "", ok("sh -c rm -rf /", "rm -rf /")},
	{"bash -lc", "bash -lc 'git status'", "bash option '-l'", nil},
	{"bash -ec", "bash -ec 'git status'", "", ok("bash -ec git status", "git status")},
	{"bash options then -c", "bash -e -o pipefail -c 'ls -l' arg0", "", ok("bash -e -o pipefail -c ls -l arg0", "ls -l")},
	{"bash -O extglob", "bash -O extglob -c 'ls'", "bash option '-O'", nil},
	{"bash -o posix", "bash -o posix -c 'ls'", "bash -o option that is not a plain run-time setting", nil},
	{"bash -c then options", "bash -c -x 'ls'", "", ok("bash -c -x ls", "ls")},
	{"bash long option", "bash --norc --noprofile -c ls", "", ok("bash --norc --noprofile -c ls", "ls")},
	{"bash rcfile", "bash --rcfile /dev/null -c ls", "bash option '--rcfile'", nil},
	{"zsh -ec", "zsh -ec 'rm x'", "", ok("zsh -ec rm x", "rm x")},
	{"dash -c double dash", "dash -c -- 'rm x'", "", ok("dash -c -- rm x", "rm x")},
	{"ksh -xc", "ksh -xc 'rm x'", "", ok("ksh -xc rm x", "rm x")},
	{"sh script file", "bash script.sh -c x", "bash without a -c script runs a script from a file", nil},
	{"sh -c no script", "sh -c", "sh without a -c script", nil},
	{"sh -c compound", "sh -c 'echo hi; rm -rf /'", "in sh -c script: control operator ';'", nil},
	{"sh -c substitution", `bash -c "echo \$(id)"`, "in sh -c script: command substitution", nil},
	{"sh -c empty", "sh -c ''", "in sh -c script: empty command", nil},
	{"sh -c glob name", "sh -c '/???/r? x'", "in sh -c script: glob in command name", nil},
	{"sh -c nested wrappers", `sh -c "sudo bash -c 'rm -rf /'"`, "", ok("sh -c sudo bash -c 'rm -rf /'", "sudo bash -c rm -rf /", "bash -c rm -rf /", "rm -rf /")},
	{"eval", "eval rm -rf /", "", ok("eval rm -rf /", "rm -rf /")},
	{"eval joins", `eval 'rm -rf' "/"`, "", ok("eval rm -rf /", "rm -rf /")},
	{"eval compound", "eval 'a;b'", "in eval script: control operator ';'", nil},
	{"eval reassembles operators", `eval echo \; rm x`, "in eval script: control operator ';'", nil},
	{"eval nothing", "eval", "", ok("eval")},
	{"busybox", "busybox rm -rf /", "", ok("busybox rm -rf /", "rm -rf /")},
	{"wrapper case", "SUDO rm x", "", ok("SUDO rm x", "rm x")},
	{"nested wrappers", "sudo env timeout 5 rm x", "", ok("sudo env timeout 5 rm x", "env timeout 5 rm x", "timeout 5 rm x", "rm x")},
	{"nested wrappers with options", "sudo env LANG=C timeout 5 rm -rf /tmp/x", "", ok("sudo env LANG=C timeout 5 rm -rf /tmp/x", "env LANG=C timeout 5 rm -rf /tmp/x", "timeout 5 rm -rf /tmp/x", "rm -rf /tmp/x")},
	{"wrapped command path", "nohup /usr/bin/rm x", "", ok("nohup /usr/bin/rm x", "rm x")},
	{"wrapped empty name", "sudo '' x", "empty command name", nil},
	{"non-wrapper", "git commit -m 'sudo rm -rf /'", "", ok("git commit -m sudo rm -rf /")},
}

func TestAnalyze(t *testing.T) {
	for _, tt := range analyzeTests {
		t.Run(tt.name, func(t *testing.T) {
			got := shell.Analyze(tt.in)
			if tt.problem == "" {
				if !got.Simple {
					t.Fatalf("Analyze(%q) not simple: %q", tt.in, got.Problem)
				}
				if got.Problem != "" {
					t.Errorf("Analyze(%q).Problem = %q for a simple command", tt.in, got.Problem)
				}
				if diff := cmp.Diff(tt.cmds, got.Commands); diff != "" {
					t.Errorf("Analyze(%q).Commands mismatch (-want +got):\n%s", tt.in, diff)
				}
				return
			}
			if got.Simple {
				t.Fatalf("Analyze(%q) simple with %q, want problem %q", tt.in, got.Commands, tt.problem)
			}
			if !strings.Contains(got.Problem, tt.problem) {
				t.Errorf("Analyze(%q).Problem = %q, want it to contain %q", tt.in, got.Problem, tt.problem)
			}
			if got.Commands != nil {
				t.Errorf("Analyze(%q).Commands = %q, want nil", tt.in, got.Commands)
			}
		})
	}
}

func TestAnalyzeTableSize(t *testing.T) {
	if len(analyzeTests) < 100 {
		t.Errorf("only %d table rows", len(analyzeTests))
	}
}

func TestNormalize(t *testing.T) {
	got, ok := shell.Normalize("sudo /bin/rm   -rf /")
	if !ok || got != "sudo /bin/rm -rf /" {
		t.Errorf("Normalize = %q, %v", got, ok)
	}
	got, ok = shell.Normalize("ls; rm x")
	if ok || got != "" {
		t.Errorf("Normalize of a compound command = %q, %v", got, ok)
	}
}

func TestTooLong(t *testing.T) {
	long := "echo " + strings.Repeat("a", shell.MaxCommandLength)
	if got := shell.Analyze(long); got.Simple || got.Problem != "command too long" {
		t.Errorf("Analyze(long) = %+v", got)
	}
	fits := "echo " + strings.Repeat("a", shell.MaxCommandLength-len("echo "))
	if got := shell.Analyze(fits); !got.Simple {
		t.Errorf("Analyze(%d bytes) not simple: %q", len(fits), got.Problem)
	}
	many := strings.Repeat("a ", shell.MaxCommandLength/2-1)
	if got := shell.Analyze(many); !got.Simple {
		t.Errorf("Analyze(many words) not simple: %q", got.Problem)
	}
}

func TestNestingDepth(t *testing.T) {
	wrap := func(n int) string { return strings.Repeat("sudo ", n) + "rm x" }
	got := shell.Analyze(wrap(shell.MaxNesting))
	if !got.Simple || len(got.Commands) != shell.MaxNesting+1 || got.Commands[len(got.Commands)-1] != "rm x" {
		t.Errorf("Analyze(%d wrappers) = %+v", shell.MaxNesting, got)
	}
	got = shell.Analyze(wrap(shell.MaxNesting + 1))
	if got.Simple || !strings.Contains(got.Problem, "wrapper nesting too deep") {
		t.Errorf("Analyze(%d wrappers) = %+v", shell.MaxNesting+1, got)
	}

	// Nested scripts: every eval parses its arguments as a new script.
	got = shell.Analyze(strings.Repeat("eval ", shell.MaxNesting) + "rm x")
	if !got.Simple || got.Commands[len(got.Commands)-1] != "rm x" {
		t.Errorf("Analyze(%d evals) = %+v", shell.MaxNesting, got)
	}
	got = shell.Analyze(strings.Repeat("eval ", shell.MaxNesting+1) + "rm x")
	if got.Simple || !strings.Contains(got.Problem, "in eval script: in eval script: ") ||
		!strings.HasSuffix(got.Problem, "wrapper nesting too deep") {
		t.Errorf("Analyze(%d evals) = %+v", shell.MaxNesting+1, got)
	}
	script := "rm x"
	for range 4 {
		script = "sh -c " + quote(script)
	}
	got = shell.Analyze(script)
	if !got.Simple || len(got.Commands) != 5 || got.Commands[4] != "rm x" {
		t.Errorf("Analyze(4 nested sh -c) = %+v", got)
	}

	// Deep syntactic nesting must not blow the stack or be simple.
	deep := strings.Repeat("(", 5000) + "rm x" + strings.Repeat(")", 5000)
	if got := shell.Analyze(deep); got.Simple {
		t.Errorf("deep subshells simple: %+v", got)
	}
	deep = "echo " + strings.Repeat("$(", 2000) + "x" + strings.Repeat(")", 2000)
	if got := shell.Analyze(deep); got.Simple {
		t.Errorf("deep substitutions simple: %+v", got)
	}
}

// quote single-quotes s for bash.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func TestConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				tt := analyzeTests[(i*31+j)%len(analyzeTests)]
				got := shell.Analyze(tt.in)
				if got.Simple != (tt.problem == "") {
					t.Errorf("Analyze(%q).Simple = %v", tt.in, got.Simple)
					return
				}
			}
		}()
	}
	wg.Wait()
}
