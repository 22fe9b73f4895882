// Command stwsyscall reproduces, without MCP or any dependency, a stall of the Go
// 1.26 runtime: a goroutine that enters a blocking read(2) just as another
// goroutine starts stopping the world (here, to start a GC) keeps its P, and the
// stop-the-world waits for that P until the read returns. The whole process stops
// until someone writes to the descriptor being read.
//
// Run without flags it is the watchdog: it starts -n copies of itself as children
// (with -child) and plays ping-pong with each over its stdin and stdout, one line
// at a time. A child reads its stdin in one goroutine (blocking reads of fd 0, as
// os.Stdin does when stdin is a pipe) and answers from another, which allocates
// 32 KiB per line (a large allocation, which may start a GC). When a child has
// not answered within -stall, the watchdog reports the stall, checks whether the
// child took the line off the pipe (FIONREAD on /proc/<pid>/fd/0), writes one more
// line to wake it and reports how soon both answers came, and sends the child
// SIGQUIT: with GOTRACEBACK=crash its stderr, kept in -dir, shows one goroutine
// "[stopping the world]" in runtime.gcStart and one "[syscall]" in read(0).
//
// With -nonblock each child first switches stdin to non-blocking mode and reads it
// through the runtime's poller: no stalls. See README.md.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

func main() {
	child := flag.Bool("child", false, "be a child: answer each line of stdin on stdout")
	n := flag.Int("n", 16, "children to run at once")
	dur := flag.Duration("d", 60*time.Second, "how long to run")
	stall := flag.Duration("stall", 2*time.Second, "an answer later than this is a stall")
	nonblock := flag.Bool("nonblock", false, "children read stdin non-blocking, through the poller")
	dir := flag.String("dir", "", "directory for the children's stderr (default: a new temporary one)")
	wake := flag.Bool("wake", false, "at a stall, write one more line to the child and go on (default: send it SIGQUIT and stop it)")
	gogc := flag.Int("gogc", 1, "the children's GC percent: 1 makes nearly every answer start a GC")
	spin := flag.Int("spin", 2000, "a child's reader spins up to this many iterations (a random number) between handing a line over and reading the next")
	flag.Parse()
	if *child {
		debug.SetGCPercent(*gogc)
		runChild(*nonblock, *spin)
		return
	}
	os.Exit(watch(*n, *dur, *stall, *nonblock, *wake, *dir, *gogc, *spin))
}

// sink and spinSink are written only, so that the allocations and the spinning
// are not optimized away.
var (
	//lint:ignore U1000 written to keep each allocation on the heap
	sink []byte
	//lint:ignore U1000 written to keep the spin loop
	spinSink uint64
)

func runChild(nonblock bool, spin int) {
	stdin := os.Stdin
	if nonblock {
		if err := syscall.SetNonblock(0, true); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		stdin = os.NewFile(0, "stdin") // pollable: made from a non-blocking descriptor
	}
	// One goroutine reads stdin and hands each line over; the other allocates
	// (which may start a GC) and answers, while the first is going back to read(2).
	lines := make(chan []byte, 1)
	go func() {
		r := bufio.NewReader(stdin)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				os.Exit(0)
			}
			lines <- line
			// A little work (a random amount) before the next read, so that
			// its start meets the other goroutine's GC start more often.
			for i := rand.IntN(spin + 1); i > 0; i-- {
				spinSink += uint64(i)
			}
		}
	}()
	for line := range lines {
		buf := make([]byte, 32<<10) // large: each may start a GC
		copy(buf, line)
		sink = buf
		if _, err := os.Stdout.Write(line); err != nil {
			os.Exit(0)
		}
	}
}

func watch(n int, dur, stall time.Duration, nonblock, wake bool, dir string, gogc, spin int) int {
	if dir == "" {
		d, err := os.MkdirTemp("", "stwsyscall-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		dir = d
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Printf("%s %s/%s GOMAXPROCS=%d: %d children for %s, nonblock=%t, gogc=%d, spin=%d, stall at %s; stderr of children in %s\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), n, dur, nonblock, gogc, spin, stall, dir)
	var (
		rounds, stalls atomic.Int64
		wg             sync.WaitGroup
		print          sync.Mutex
	)
	deadline := time.Now().Add(dur)
	for i := range n {
		wg.Go(func() {
			args := []string{"-child", "-gogc", strconv.Itoa(gogc), "-spin", strconv.Itoa(spin)}
			if nonblock {
				args = append(args, "-nonblock")
			}
			errf, err := os.Create(filepath.Join(dir, fmt.Sprintf("child-%02d.stderr", i)))
			if err != nil {
				panic(err)
			}
			defer errf.Close()
			cmd := exec.Command(self, args...)
			cmd.Env = append(os.Environ(), "GOTRACEBACK=crash")
			cmd.Stderr = errf
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			in, _ := cmd.StdinPipe()
			outPipe, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				panic(err)
			}
			defer func() {
				in.Close()
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}()
			out := bufio.NewReader(outPipe)
			answers := make(chan error, 1)
			readLine := func() { _, err := out.ReadBytes('\n'); answers <- err }
			for k := 0; time.Now().Before(deadline); k++ {
				if _, err := fmt.Fprintf(in, "%d\n", k); err != nil {
					panic(err)
				}
				go readLine()
				select {
				case err := <-answers:
					if err != nil {
						panic(err)
					}
					rounds.Add(1)
					continue
				case <-time.After(stall):
				}
				stalls.Add(1)
				pid := cmd.Process.Pid
				unread, _ := pipeBytes(pid, 0)
				report := func(what string) {
					print.Lock()
					fmt.Printf("STALL: child %d (pid %d), line %d unanswered after %s; %d bytes of it unread in its stdin; %s\n",
						i, pid, k, stall, unread, what)
					print.Unlock()
				}
				if !wake {
					// Dump the child as it is, stalled, and wait for the dump to end.
					_ = syscall.Kill(pid, syscall.SIGQUIT)
					<-answers
					_ = cmd.Wait()
					report("sent SIGQUIT: its dump is in " + errf.Name())
					return
				}
				sent := time.Now()
				if _, err := io.WriteString(in, "wake\n"); err != nil {
					panic(err)
				}
				select {
				case <-answers:
					report(fmt.Sprintf("answered %s after a second line was written", time.Since(sent).Round(time.Microsecond)))
					go readLine()
					<-answers // the second line's answer
				case <-time.After(stall):
					report("still unanswered after a second line was written")
					return
				}
			}
		})
	}
	wg.Wait()
	fmt.Printf("%d round trips, %d stalls\n", rounds.Load(), stalls.Load())
	if stalls.Load() > 0 {
		fmt.Printf("the stalled children's dumps (SIGQUIT, GOTRACEBACK=crash) are in %s\n", dir)
		return 1
	}
	return 0
}

// pipeBytes returns the bytes waiting in the pipe that is descriptor fd of pid.
func pipeBytes(pid, fd int) (int, error) {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int32
	const fionread = 0x541B
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), fionread, uintptr(unsafe.Pointer(&n))); errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
