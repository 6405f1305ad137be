# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_nastune_global_optspecs
    string join \n db= no-store h/help V/version
end

function __fish_nastune_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_nastune_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_nastune_using_subcommand
    set -l cmd (__fish_nastune_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c nastune -n "__fish_nastune_needs_command" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_needs_command" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_needs_command" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_needs_command" -f -a "probe" -d 'Inventory the box: host, CPU, memory, network, storage stack, settings'
complete -c nastune -n "__fish_nastune_needs_command" -f -a "check" -d 'The main job: probe, measure quickly, advise, name the bottleneck'
complete -c nastune -n "__fish_nastune_needs_command" -f -a "advise" -d 'Find misconfigurations and explain them, with the arithmetic'
complete -c nastune -n "__fish_nastune_needs_command" -f -a "history" -d 'List, show or remove stored runs'
complete -c nastune -n "__fish_nastune_needs_command" -f -a "net" -d 'Run a network test server (iperf3-compatible) on this box'
complete -c nastune -n "__fish_nastune_needs_command" -f -a "bench" -d 'Measure what the box does: disk, crypto, network, HTTP, SMB'
complete -c nastune -n "__fish_nastune_needs_command" -f -a "compare" -d 'Compare two stored runs: benchmark changes with confidence intervals, settings that differ'
complete -c nastune -n "__fish_nastune_needs_command" -f -a "report" -d 'Write stored runs as one self-contained HTML page or as Markdown'
complete -c nastune -n "__fish_nastune_needs_command" -f -a "watch" -d 'Watch error counters, disks, md, SMART, pressure and temperatures over time'
complete -c nastune -n "__fish_nastune_needs_command" -f -a "tune" -d 'Apply findings as journaled changes: plan, apply, verify, rollback, confirm'
complete -c nastune -n "__fish_nastune_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nastune -n "__fish_nastune_using_subcommand probe" -l root -d 'Read the system from this tree (with proc/, sys/, etc/) instead of /' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand probe" -l capture -d 'Copy every file the probe reads into DIR (must be new or empty)' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand probe" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand probe" -l json -d 'Print the versioned JSON document instead of the summary'
complete -c nastune -n "__fish_nastune_using_subcommand probe" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand probe" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand probe" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand check" -l dir -d 'Directory for the disk tests (a temporary file is created and removed there); default: the --smb share\'s directory when this box serves it, else the current one' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand check" -l disk-seconds -d 'Measured seconds per disk test (four tests)' -r
complete -c nastune -n "__fish_nastune_using_subcommand check" -l disk-size -d 'Size of the temporary disk test file' -r
complete -c nastune -n "__fish_nastune_using_subcommand check" -l peer -d 'Also measure the network against this host running \'nastune net serve\' or \'iperf3 -s\'' -r
complete -c nastune -n "__fish_nastune_using_subcommand check" -l smb -d 'Also copy a file to and from this SMB share (//HOST[:PORT]/SHARE[/DIR]): the end-to-end figure the bottleneck model is checked against' -r
complete -c nastune -n "__fish_nastune_using_subcommand check" -l smb-user -d 'User for --smb (password from NASTUNE_SMB_PASSWORD, --smb-password-file or a prompt)' -r
complete -c nastune -n "__fish_nastune_using_subcommand check" -l smb-password-file -d 'Read the --smb password from the first line of this file' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand check" -l smb-size -d 'Bytes written then read over --smb' -r
complete -c nastune -n "__fish_nastune_using_subcommand check" -l root -d 'Read the system from this tree (with proc/, sys/, etc/) instead of / and measure nothing: the bottleneck uses the ceilings the tree shows (links, USB buses)' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand check" -l fail-on -d 'Exit with status 1 when a finding is at or above this severity' -r -f -a "info\t''
notice\t''
warning\t''
critical\t''"
complete -c nastune -n "__fish_nastune_using_subcommand check" -l settle -d 'Seconds to wait for an idle box before measuring (0 = don\'t wait); a box that never goes idle makes the run \'disturbed\'' -r
complete -c nastune -n "__fish_nastune_using_subcommand check" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand check" -l skip-disk -d 'Do not run the disk tests'
complete -c nastune -n "__fish_nastune_using_subcommand check" -l skip-crypto -d 'Do not run the cipher tests'
complete -c nastune -n "__fish_nastune_using_subcommand check" -l skip-tcp -d 'Do not measure the loopback TCP ceiling'
complete -c nastune -n "__fish_nastune_using_subcommand check" -l smb-encrypt-too -d 'Copy over --smb a second time with SMB encryption on: the encrypted copy\'s per-byte costs give the what-if "SMB encryption on"'
complete -c nastune -n "__fish_nastune_using_subcommand check" -l json -d 'Print the versioned JSON document instead of the summary'
complete -c nastune -n "__fish_nastune_using_subcommand check" -l strict -d 'Exit 1 when the run was disturbed (other processes\' CPU, swapping, throttling, a syncing array, the page cache …; see the result\'s validity)'
complete -c nastune -n "__fish_nastune_using_subcommand check" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand check" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand advise" -l root -d 'Read the system from this tree (with proc/, sys/, etc/) instead of /' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand advise" -l fail-on -d 'Exit with status 1 when a finding is at or above this severity' -r -f -a "info\t''
notice\t''
warning\t''
critical\t''"
complete -c nastune -n "__fish_nastune_using_subcommand advise" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand advise" -l list -d 'Print the rule registry instead of evaluating it'
complete -c nastune -n "__fish_nastune_using_subcommand advise" -l json -d 'Print JSON instead of text'
complete -c nastune -n "__fish_nastune_using_subcommand advise" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand advise" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand advise" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand history; and not __fish_seen_subcommand_from list show rm export import help" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand history; and not __fish_seen_subcommand_from list show rm export import help" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand history; and not __fish_seen_subcommand_from list show rm export import help" -s h -l help -d 'Print help'
complete -c nastune -n "__fish_nastune_using_subcommand history; and not __fish_seen_subcommand_from list show rm export import help" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand history; and not __fish_seen_subcommand_from list show rm export import help" -f -a "list" -d 'List stored runs, newest first'
complete -c nastune -n "__fish_nastune_using_subcommand history; and not __fish_seen_subcommand_from list show rm export import help" -f -a "show" -d 'Show one run: its record, then its results as its command printed them'
complete -c nastune -n "__fish_nastune_using_subcommand history; and not __fish_seen_subcommand_from list show rm export import help" -f -a "rm" -d 'Remove runs and their documents from the store'
complete -c nastune -n "__fish_nastune_using_subcommand history; and not __fish_seen_subcommand_from list show rm export import help" -f -a "export" -d 'Write runs with their documents as one JSON file (to stdout), to compare or report them on another box'
complete -c nastune -n "__fish_nastune_using_subcommand history; and not __fish_seen_subcommand_from list show rm export import help" -f -a "import" -d 'Read runs written by \'history export\' into this store (all or nothing)'
complete -c nastune -n "__fish_nastune_using_subcommand history; and not __fish_seen_subcommand_from list show rm export import help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from list" -l kind -d 'Only runs of this kind' -r -f -a "probe\t''
advise\t''
check\t''
bench-disk\t''
bench-crypto\t''
bench-net\t''
bench-http\t''
bench-smb\t''
watch\t''
tune\t''
tune-try\t''"
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from list" -l limit -d 'At most this many runs' -r
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from list" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from list" -l json -d 'JSON instead of a table'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from list" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from show" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from show" -l json -d 'JSON instead of a summary'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from show" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from rm" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from rm" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from rm" -s h -l help -d 'Print help'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from rm" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from export" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from export" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from export" -s h -l help -d 'Print help'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from export" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from import" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from import" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from import" -s h -l help -d 'Print help'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from import" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "list" -d 'List stored runs, newest first'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show one run: its record, then its results as its command printed them'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "rm" -d 'Remove runs and their documents from the store'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "export" -d 'Write runs with their documents as one JSON file (to stdout), to compare or report them on another box'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "import" -d 'Read runs written by \'history export\' into this store (all or nothing)'
complete -c nastune -n "__fish_nastune_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nastune -n "__fish_nastune_using_subcommand net; and not __fish_seen_subcommand_from serve help" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand net; and not __fish_seen_subcommand_from serve help" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand net; and not __fish_seen_subcommand_from serve help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand net; and not __fish_seen_subcommand_from serve help" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand net; and not __fish_seen_subcommand_from serve help" -f -a "serve" -d 'Serve iperf3 and nastune clients (several tests at once, busy answered at once)'
complete -c nastune -n "__fish_nastune_using_subcommand net; and not __fish_seen_subcommand_from serve help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -s p -l port -d 'TCP and UDP port to listen on' -r
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -s B -l bind -d 'Address to bind' -r
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -l max-sessions -d 'Tests that may run at the same time; one more gets ACCESS_DENIED at once' -r
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -l max-duration -d 'Longest test (time plus omit) a client may ask for, in seconds' -r
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -l max-streams -d 'Most parallel streams per test' -r
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -l max-bitrate -d 'Highest per-stream bitrate a client may ask for (e.g. 1G); unlimited if unset' -r
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -l allow -d 'Peers allowed to test (repeatable) [default: loopback and private ranges]' -r
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -l psk-file -d 'Require clients to prove this pre-shared key (HMAC-SHA256 challenge)' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -l handshake-timeout -d 'Seconds a connection may take from connect to complete parameters, in all' -r
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -l sessions -d 'Exit after this many sessions (for scripts and tests)' -r
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -l json -d 'One JSON line per finished session instead of a text line'
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -s h -l help -d 'Print help'
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from serve" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from help" -f -a "serve" -d 'Serve iperf3 and nastune clients (several tests at once, busy answered at once)'
complete -c nastune -n "__fish_nastune_using_subcommand net; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and not __fish_seen_subcommand_from disk crypto net http smb help" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand bench; and not __fish_seen_subcommand_from disk crypto net http smb help" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and not __fish_seen_subcommand_from disk crypto net http smb help" -s h -l help -d 'Print help'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and not __fish_seen_subcommand_from disk crypto net http smb help" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and not __fish_seen_subcommand_from disk crypto net http smb help" -f -a "disk" -d 'Storage throughput, IOPS, latency and the CPU they cost'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and not __fish_seen_subcommand_from disk crypto net http smb help" -f -a "crypto" -d 'Cipher and key-derivation speed: kernel (AF_ALG, as dm-crypt) and user space'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and not __fish_seen_subcommand_from disk crypto net http smb help" -f -a "net" -d 'Network throughput (TCP/UDP, iperf3-compatible) and request/response latency'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and not __fish_seen_subcommand_from disk crypto net http smb help" -f -a "http" -d 'HTTP/1.1 and HTTPS load: requests/s, latency by phase, TLS cost per connection mode'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and not __fish_seen_subcommand_from disk crypto net http smb help" -f -a "smb" -d 'File-service throughput through the real SMB2/3 protocol, and what signing and encryption cost'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and not __fish_seen_subcommand_from disk crypto net http smb help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l suite -d 'Set of tests to run when --rw is not given' -r -f -a "quick\t'SEQ1M Q8T1 and RND4K Q32T1, read and write (under a minute)'
nas\t'SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1, read and write'
cache\t'Direct against buffered sequential read and write'
durability\t'4K random writes with fsync each; sequential writes with the drive\'s write cache on and off'"
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l rw -d 'One custom test instead of a suite (fio\'s rw)' -r -f -a "read\t''
write\t''
randread\t''
randwrite\t''
rw\t'Sequential mixed reads and writes (`--rwmixread` percent reads)'
randrw\t'Random mixed reads and writes (`--rwmixread` percent reads)'"
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l rwmixread -d 'Percent of reads in rw and randrw' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l bs -d 'Block size per I/O (4k, 1m …)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l iodepth -d 'I/Os kept in flight per job (psync always runs at depth 1)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l numjobs -d 'Parallel jobs (threads), each with its own file descriptor' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l direct -d 'O_DIRECT: bypass the page cache (suites default to 1, --rw to 0)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l size -d 'Bytes of the target to use; for a directory, the temporary file\'s size' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l runtime -d 'Measured time per test (10, 10s, 500ms, 2m) [default: 5s]' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l ramp-time -d 'Warm-up before measuring; its I/O is not counted [default: 1s for suites, 0 for --rw]' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l fsync -d 'fsync after every N writes' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l fdatasync -d 'fdatasync after every N writes' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l loops -d 'Repeat each test N times and report the spread' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l engine -d 'I/O engine [default: io_uring when available, else psync]' -r -f -a "io_uring\t'Linux io_uring: batched submission, registered buffers'
psync\t'pread(2)/pwrite(2), one I/O at a time'
null\t'No I/O at all: measures the benchmark\'s own overhead'"
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l destroy-data -d 'Allow writes to this block device even though it holds data (must be a PATH; repeat for each; never while mounted, held or swap)' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l interval -d 'Seconds per throughput point of each test\'s timeline (0.1 and up, iperf3\'s -i)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l settle -d 'Seconds to wait for an idle box before measuring (0 = don\'t wait); a box that never goes idle makes the run \'disturbed\'' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l buffered -d 'Same as --direct=0'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l end-fsync -d 'One fsync at the end of each write test, timed inside the measured window'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l verify -d 'Read back and check every block a write test wrote'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l stack -d 'Run the --rw read test at every layer under PATH: the file, dm, md, partition, each disk and the disks together'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l until-steady -d 'Write (or read) until the rate settles: the last 10 s within ±15 % after the page cache filled; --runtime is the cap [default with it: 300s]'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l json -d 'Print the versioned JSON document instead of the table'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l strict -d 'Exit 1 when the run was disturbed (other processes\' CPU, swapping, throttling, a syncing array, the page cache …; see the result\'s validity)'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from disk" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l duration -d 'Seconds per measured point (0.01-60)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l size -d 'Request sizes, comma-separated: multiples of 16 from 16 to 65536 (suffix k = KiB)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l sector-size -d 'A dm-crypt volume\'s sector size (512, 1024, 2048 or 4096: cryptsetup\'s --sector-size; `probe` shows it): measured whatever --size says, so check and advise find the figure at the request size the volume\'s cipher sees' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l depth -d 'Kernel requests in flight for the second run of each size (1 = single run only)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l cipher -d 'Only ciphers whose name contains one of these (e.g. xts,gcm)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l argon2-memory-kib -d 'Argon2id memory before the RAM, MemAvailable and cgroup caps [default: LUKS2\'s 1048576]' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l settle -d 'Seconds to wait for an idle box before measuring (0 = don\'t wait); a box that never goes idle makes the run \'disturbed\'' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l no-kdf -d 'Skip PBKDF2 and Argon2id'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l json -d 'Print the versioned JSON document instead of the table'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l self-test -d 'Run the known-answer vectors through every path instead of measuring; exit 1 on mismatch'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l require-afalg -d 'With --self-test: also fail when the kernel path (AF_ALG) is unavailable'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l strict -d 'Exit 1 when the run was disturbed (other processes\' CPU, swapping, throttling, a syncing array, the page cache …; see the result\'s validity)'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from crypto" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s p -l port -d 'Server port' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s t -l time -d 'Seconds to transmit' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s P -l parallel -d 'Parallel streams' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s O -l omit -d 'Seconds of warm-up left out of the totals' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s i -l interval -d 'Seconds between interval reports (0 = none)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s b -l bitrate -d 'Target bitrate per stream in bits/s (K/M/G = 1000ⁿ) [UDP default: 1M]' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s w -l window -d 'Socket buffer size (K/M = 1024ⁿ)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s l -l length -d 'Block size per write (TCP default 128K, UDP 1448)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s M -l set-mss -d 'TCP maximum segment size' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l request-size -d 'Request size for --rr/--crr' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l response-size -d 'Response size for --rr/--crr' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l psk-file -d 'Pre-shared key file for a server started with --psk-file' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l settle -d 'Seconds to wait for an idle box before measuring (0 = don\'t wait); a box that never goes idle makes the run \'disturbed\'' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l loopback -d 'Run a server in this process and test against it on 127.0.0.1'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s R -l reverse -d 'Server sends, client receives'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l bidir -d 'Both directions at once'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s u -l udp -d 'UDP instead of TCP'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s N -l no-delay -d 'TCP_NODELAY on the data connections'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l udp-counters-64bit -d '64-bit UDP packet counters'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l copy -d 'Plain write()/read() instead of sendfile() and recv(MSG_TRUNC)'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l rr -d 'Request/response latency test on kept-open connections (nastune server only)'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l crr -d 'Connect+request+response per transaction (nastune server only)'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l json -d 'Print the versioned JSON document (iperf3 key names) instead of text'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l strict -d 'Exit 1 when the run was disturbed (other processes\' CPU, swapping, throttling, a syncing array, the page cache …; see the result\'s validity)'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from net" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -s t -l threads -d 'Threads, each with its own event loop' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -s c -l connections -d 'Connections in total, spread over the threads' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -s d -l duration -d 'Seconds of measured load (after the warm-up)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -l warmup -d 'Seconds of load before measuring starts' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -l timeout -d 'Seconds a request may take, connect to last byte, before it counts as a timeout' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -l rate -d 'Open loop: this many requests per second in total, latency from the intended send time' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -l mode -d 'Connection modes to run, comma-separated' -r -f -a "keep-alive\t'Many requests per connection (HTTP/1.1 keep-alive)'
close\t'A new connection (and full TLS handshake) per request'
resume\t'A new connection per request, resuming the TLS session (ticket or ID)'"
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -l compare -d 'Run the same load against this URL too and report the slowdown factor per mode' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -s X -l method -d 'Request method' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -s H -l header -d 'Extra request header \'Name: value\' (repeatable)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -l body -d 'Request body' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -l body-file -d 'Request body read from a file (at most 1 MiB)' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -l cacert -d 'Trust only the certificates in this PEM file (CAs, or the server\'s own)' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -l settle -d 'Seconds to wait for an idle box before measuring (0 = don\'t wait); a box that never goes idle makes the run \'disturbed\'' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -s k -l insecure -d 'Accept any server certificate (self-signed home servers)'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -l json -d 'Print the versioned JSON document instead of the summary'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -l strict -d 'Exit 1 when the run was disturbed (other processes\' CPU, swapping, throttling, a syncing array, the page cache …; see the result\'s validity)'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from http" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -s U -l user -d 'User to log on as (NAME or DOMAIN\\NAME); without it, an anonymous (guest) session' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l password-file -d 'Read the password from the first line of this file' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -s w -l workload -d 'Workloads to run, comma-separated (default: all)' -r -f -a "seq-write\t''
seq-read\t''
small-files\t''
metadata\t''"
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l size -d 'Size of the sequential file (e.g. 512M, 4G); default 1G or what the share has room for' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l block -d 'Request size of the sequential workloads, capped to the server\'s maximum' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l depth -d 'Requests in flight in the sequential workloads' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l interval -d 'Seconds per throughput point of the sequential and small-file workloads\' timeline (0.1 and up, iperf3\'s -i)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l files -d 'Files in the small-files workload' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l security -d 'Client-side security: plain, sign or encrypt' -r -f -a "plain\t''
sign\t''
encrypt\t''"
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l dialect -d 'Dialects to offer, comma-separated (2.0.2, 2.1, 3.0, 3.0.2, 3.1.1; default all)' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l timeout -d 'Seconds without an answer from the server before the run fails' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l settle -d 'Seconds to wait for an idle box before measuring (0 = don\'t wait); a box that never goes idle makes the run \'disturbed\'' -r
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l compare-security -d 'Run every workload plain, signed and encrypted and print the slowdown factors'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l json -d 'Print the result as JSON'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l strict -d 'Exit 1 when the run was disturbed (other processes\' CPU, swapping, throttling, a syncing array, the page cache …; see the result\'s validity)'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from smb" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "disk" -d 'Storage throughput, IOPS, latency and the CPU they cost'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "crypto" -d 'Cipher and key-derivation speed: kernel (AF_ALG, as dm-crypt) and user space'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "net" -d 'Network throughput (TCP/UDP, iperf3-compatible) and request/response latency'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "http" -d 'HTTP/1.1 and HTTPS load: requests/s, latency by phase, TLS cost per connection mode'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "smb" -d 'File-service throughput through the real SMB2/3 protocol, and what signing and encryption cost'
complete -c nastune -n "__fish_nastune_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nastune -n "__fish_nastune_using_subcommand compare" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand compare" -l json -d 'Print the versioned JSON document instead of the table'
complete -c nastune -n "__fish_nastune_using_subcommand compare" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand compare" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand compare" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand report" -l html -d 'Write the HTML page to FILE (\'-\' for stdout)' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand report" -l markdown -d 'Write Markdown to FILE (\'-\' for stdout)' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand report" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand report" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand report" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand report" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l interval -d 'Seconds between samples [default: 10]; with --replay, the time between trees that record none (no .nastune/timestamp.json, no btime and uptime)' -r
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l count -d 'Stop after N samples (default: run until stopped)' -r
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l metrics-listen -d 'Serve Prometheus text format at http://ADDR/metrics (a bare port means 127.0.0.1:PORT)' -r
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l replay -d 'Treat each captured tree as one sample, in the order given' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l smart-interval -d 'Seconds between SMART reads (smartctl --json, when installed)' -r
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l increases -d 'Alert when an error counter increased in this many samples...' -r
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l within -d '...within this many seconds' -r
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l max-rate -d 'Alert when an error counter grows faster than this per second' -r
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l max-temp -d 'Alert when a temperature reaches this' -r
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l exec -d 'Run this shell command for every alert, with the alert\'s JSON on stdin' -r
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l exec-timeout -d 'Kill an --exec command that runs longer than this' -r
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l persist-every -d 'Seconds between store writes of baselines and counter points (always at the end)' -r
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l keep-days -d 'Drop stored counter points, and baselines of series not seen, after this many days' -r
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l json -d 'Print JSON Lines (one per sample and one per alert) instead of text'
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l no-smart -d 'Do not run smartctl'
complete -c nastune -n "__fish_nastune_using_subcommand watch" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand watch" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand watch" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and not __fish_seen_subcommand_from plan apply rollback verify confirm try export help" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and not __fish_seen_subcommand_from plan apply rollback verify confirm try export help" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and not __fish_seen_subcommand_from plan apply rollback verify confirm try export help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and not __fish_seen_subcommand_from plan apply rollback verify confirm try export help" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and not __fish_seen_subcommand_from plan apply rollback verify confirm try export help" -f -a "plan" -d 'Show the changes the findings imply: old -> new, why, risk'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and not __fish_seen_subcommand_from plan apply rollback verify confirm try export help" -f -a "apply" -d 'Apply the plan: journal old values, write runtime values and persistence'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and not __fish_seen_subcommand_from plan apply rollback verify confirm try export help" -f -a "rollback" -d 'Restore what a session (default: the latest) changed'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and not __fish_seen_subcommand_from plan apply rollback verify confirm try export help" -f -a "verify" -d 'Check each owned setting: applied, drifted or unsupported'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and not __fish_seen_subcommand_from plan apply rollback verify confirm try export help" -f -a "confirm" -d 'Keep the network changes of a session (stops the dead-man timer)'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and not __fish_seen_subcommand_from plan apply rollback verify confirm try export help" -f -a "try" -d 'Measure a workload without and with one change; keep it only if it beats the noise'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and not __fish_seen_subcommand_from plan apply rollback verify confirm try export help" -f -a "export" -d 'Write the plan as a sysctl.d file, udev rules, a TuneD profile or Ansible tasks'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and not __fish_seen_subcommand_from plan apply rollback verify confirm try export help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from plan" -l set -d 'A change of your own: sysctl:KEY=VALUE, sysfs:PATH=VALUE (PATH below /sys), ethtool:IFACE:SETTING=VALUE (rx, tx, mtu, txqueuelen, qdisc, a feature, or coalescing: rx-usecs, rx-frames, tx-usecs, tx-frames, adaptive-rx, adaptive-tx), irq:N=CPULIST or irq:IFACE=CPULIST (IRQ affinity), rps:IFACE:rx-N=MASK, xps:IFACE:tx-N=MASK, dmcrypt:NAME:no_read_workqueue=on|off (or no_write_workqueue), fstab:MOUNTPOINT=OPT,-OPT or smb.conf:SECTION:PARAMETER=VALUE; repeatable' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from plan" -l root -d 'Work on this tree (with proc/, sys/, etc/) instead of /' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from plan" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from plan" -l json -d 'Print JSON instead of text'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from plan" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from plan" -s h -l help -d 'Print help'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from plan" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from apply" -l set -d 'A change of your own: sysctl:KEY=VALUE, sysfs:PATH=VALUE (PATH below /sys), ethtool:IFACE:SETTING=VALUE (rx, tx, mtu, txqueuelen, qdisc, a feature, or coalescing: rx-usecs, rx-frames, tx-usecs, tx-frames, adaptive-rx, adaptive-tx), irq:N=CPULIST or irq:IFACE=CPULIST (IRQ affinity), rps:IFACE:rx-N=MASK, xps:IFACE:tx-N=MASK, dmcrypt:NAME:no_read_workqueue=on|off (or no_write_workqueue), fstab:MOUNTPOINT=OPT,-OPT or smb.conf:SECTION:PARAMETER=VALUE; repeatable' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from apply" -l root -d 'Work on this tree (with proc/, sys/, etc/) instead of /' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from apply" -l confirm-within -d 'Network changes revert unless \'tune confirm\' comes within this time (10s, 2m)' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from apply" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from apply" -s y -l yes -d 'Apply without asking'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from apply" -l reload -d 'Afterwards remount each edited mount point and reload Samba\'s configuration (live system only)'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from apply" -l json -d 'Print JSON instead of text'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from apply" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from apply" -s h -l help -d 'Print help'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from apply" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from rollback" -l entry -d 'Roll back only this journal entry' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from rollback" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from rollback" -l json -d 'Print JSON instead of text'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from rollback" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from rollback" -s h -l help -d 'Print help'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from rollback" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from verify" -l root -d 'Check the settings written to this tree instead of /' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from verify" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from verify" -l json -d 'Print JSON instead of text'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from verify" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from verify" -s h -l help -d 'Print help'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from verify" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from confirm" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from confirm" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from confirm" -s h -l help -d 'Print help'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from confirm" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l set -d 'Or a change of your own: sysctl:KEY=VALUE, sysfs:PATH=VALUE (PATH below /sys), ethtool:IFACE:rx-usecs=N (coalescing), irq:N|IFACE=CPULIST, rps:IFACE:rx-N=MASK, xps:IFACE:tx-N=MASK, dmcrypt:NAME:no_read_workqueue=on or smb.conf:SECTION:PARAMETER=VALUE' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l bench -d 'The judge. A disk workload KIND:PATH: seq-read or rand-read (direct I/O, which read-ahead does not touch), buffered-seq-read (through the emptied page cache: the one a queue/read_ahead_kb change needs), on a block device, file or directory; seq-write, rand-write (direct I/O), rand-write-fsync (buffered, fsync after each write) or buffered-seq-write (1 MiB buffered writes, a copy\'s) on a directory (a temporary file there, never a device). Or net:HOST[:PORT] (bench net to a peer running \'nastune net serve\'), smb://HOST[:PORT]/SHARE[/DIR] (bench smb) or http:URL (bench http). With --folklore, repeatable: each recipe is judged by the first given judge that exercises it' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l metric -d 'The judge\'s number to decide by: bw, iops, p99 or cpu_per_gb; for a disk workload also stall (the longest time with no I/O completed, s: lower is better) or sustained (MB/s after the first seconds or after the cliff) [default: the judge\'s own: bw for sequential disk, net and smb; iops for random disk and http; p99 with --rr]' -r -f -a "bw\t'Throughput: bytes (or bits) per second'
iops\t'Operations (I/Os, requests, transactions) per second'
p99\t'99th percentile latency'
cpu_per_gb\t'CPU-seconds spent per GB moved (this box\'s, where it can be counted)'
stall\t'Disk judges: the longest time with no I/O completed, in seconds (the freeze a copy shows when writeback holds the writer)'
sustained\t'Disk judges: the rate after the first seconds, or after the cliff when there is one (what a long copy settles at once the cache is full)'"
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -s U -l user -d 'smb judge: user to log on as (NAME or DOMAIN\\NAME; password from NASTUNE_SMB_PASSWORD, --password-file or a prompt); without it, a guest session' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l password-file -d 'smb judge: read the password from the first line of this file' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l smb-size -d 'smb judge: bytes written (or read) per run' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l runs -d 'Measurements on each side (without and with the change); an even count makes whole ABBA blocks, an odd one leaves the changed side half a run later on average' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l runtime -d 'Length of one measurement (1s, 500ms)' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l confidence -d 'Two-sided confidence of the interval of the difference' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l min-gain -d 'Keep the change only if the mean gains at least this many percent' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l root -d 'Work on this tree (with proc/, sys/, etc/) instead of /; the workload still runs on PATH' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l settle -d 'Seconds to wait for an idle box before measuring (0 = don\'t wait); a box that never goes idle makes the run \'disturbed\'' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l folklore -d 'Instead: try each well-known tuning recipe that applies to this box (read-ahead, schedulers, dirty ratios, swappiness, socket buffers, txqueuelen, smb.conf folklore), one trial after another, each reverted unless --keep-helpful; prints a table of their measured effects, recipes no --bench exercises listed as skipped with why'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l keep-helpful -d 'With --folklore: keep each recipe whose trial says keep (later recipes are then measured on top of it)'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l rr -d 'net judge: request/response latency (transactions/s and p99) instead of throughput'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l smb-read -d 'smb judge: time a sequential read (of a file written first) instead of a write'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l allow-weaker-security -d 'Keep a change that lowers security (SMB signing or encryption weaker, TCP timestamps off) when it wins; without it such a change is always reverted'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -s y -l yes -d 'Try without asking'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l json -d 'Print JSON instead of text'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l strict -d 'Exit 1 when the run was disturbed (other processes\' CPU, swapping, throttling, a syncing array, the page cache …; see the result\'s validity)'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from try" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from export" -l set -d 'A change of your own: sysctl:KEY=VALUE, sysfs:PATH=VALUE (PATH below /sys), ethtool:IFACE:SETTING=VALUE (rx, tx, mtu, txqueuelen, qdisc, a feature, or coalescing: rx-usecs, rx-frames, tx-usecs, tx-frames, adaptive-rx, adaptive-tx), irq:N=CPULIST or irq:IFACE=CPULIST (IRQ affinity), rps:IFACE:rx-N=MASK, xps:IFACE:tx-N=MASK, dmcrypt:NAME:no_read_workqueue=on|off (or no_write_workqueue), fstab:MOUNTPOINT=OPT,-OPT or smb.conf:SECTION:PARAMETER=VALUE; repeatable' -r
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from export" -l root -d 'Work on this tree (with proc/, sys/, etc/) instead of /' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from export" -l format -d 'What to write' -r -f -a "sysctl\t'A sysctl.d drop-in (sysctl settings only)'
udev\t'udev rules that set block and network device attributes at add/change'
tuned\t'A TuneD profile directory: [sysctl], [sysfs], [disk], [net]'
ansible\t'Ansible tasks: ansible.posix.sysctl, community.general.ini_file, udev lines'"
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from export" -s o -l output -d 'Directory to write the files into (\'-\': stdout, each file after a \'# ==> path <==\' line)' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from export" -l db -d 'Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]' -r -F
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from export" -l no-store -d 'Do not save this run in the store'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from export" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from export" -s V -l version -d 'Print version'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "plan" -d 'Show the changes the findings imply: old -> new, why, risk'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "apply" -d 'Apply the plan: journal old values, write runtime values and persistence'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "rollback" -d 'Restore what a session (default: the latest) changed'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "verify" -d 'Check each owned setting: applied, drifted or unsupported'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "confirm" -d 'Keep the network changes of a session (stops the dead-man timer)'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "try" -d 'Measure a workload without and with one change; keep it only if it beats the noise'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "export" -d 'Write the plan as a sysctl.d file, udev rules, a TuneD profile or Ansible tasks'
complete -c nastune -n "__fish_nastune_using_subcommand tune; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nastune -n "__fish_nastune_using_subcommand help; and not __fish_seen_subcommand_from probe check advise history net bench compare report watch tune help" -f -a "probe" -d 'Inventory the box: host, CPU, memory, network, storage stack, settings'
complete -c nastune -n "__fish_nastune_using_subcommand help; and not __fish_seen_subcommand_from probe check advise history net bench compare report watch tune help" -f -a "check" -d 'The main job: probe, measure quickly, advise, name the bottleneck'
complete -c nastune -n "__fish_nastune_using_subcommand help; and not __fish_seen_subcommand_from probe check advise history net bench compare report watch tune help" -f -a "advise" -d 'Find misconfigurations and explain them, with the arithmetic'
complete -c nastune -n "__fish_nastune_using_subcommand help; and not __fish_seen_subcommand_from probe check advise history net bench compare report watch tune help" -f -a "history" -d 'List, show or remove stored runs'
complete -c nastune -n "__fish_nastune_using_subcommand help; and not __fish_seen_subcommand_from probe check advise history net bench compare report watch tune help" -f -a "net" -d 'Run a network test server (iperf3-compatible) on this box'
complete -c nastune -n "__fish_nastune_using_subcommand help; and not __fish_seen_subcommand_from probe check advise history net bench compare report watch tune help" -f -a "bench" -d 'Measure what the box does: disk, crypto, network, HTTP, SMB'
complete -c nastune -n "__fish_nastune_using_subcommand help; and not __fish_seen_subcommand_from probe check advise history net bench compare report watch tune help" -f -a "compare" -d 'Compare two stored runs: benchmark changes with confidence intervals, settings that differ'
complete -c nastune -n "__fish_nastune_using_subcommand help; and not __fish_seen_subcommand_from probe check advise history net bench compare report watch tune help" -f -a "report" -d 'Write stored runs as one self-contained HTML page or as Markdown'
complete -c nastune -n "__fish_nastune_using_subcommand help; and not __fish_seen_subcommand_from probe check advise history net bench compare report watch tune help" -f -a "watch" -d 'Watch error counters, disks, md, SMART, pressure and temperatures over time'
complete -c nastune -n "__fish_nastune_using_subcommand help; and not __fish_seen_subcommand_from probe check advise history net bench compare report watch tune help" -f -a "tune" -d 'Apply findings as journaled changes: plan, apply, verify, rollback, confirm'
complete -c nastune -n "__fish_nastune_using_subcommand help; and not __fish_seen_subcommand_from probe check advise history net bench compare report watch tune help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from history" -f -a "list" -d 'List stored runs, newest first'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from history" -f -a "show" -d 'Show one run: its record, then its results as its command printed them'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from history" -f -a "rm" -d 'Remove runs and their documents from the store'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from history" -f -a "export" -d 'Write runs with their documents as one JSON file (to stdout), to compare or report them on another box'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from history" -f -a "import" -d 'Read runs written by \'history export\' into this store (all or nothing)'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from net" -f -a "serve" -d 'Serve iperf3 and nastune clients (several tests at once, busy answered at once)'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "disk" -d 'Storage throughput, IOPS, latency and the CPU they cost'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "crypto" -d 'Cipher and key-derivation speed: kernel (AF_ALG, as dm-crypt) and user space'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "net" -d 'Network throughput (TCP/UDP, iperf3-compatible) and request/response latency'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "http" -d 'HTTP/1.1 and HTTPS load: requests/s, latency by phase, TLS cost per connection mode'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "smb" -d 'File-service throughput through the real SMB2/3 protocol, and what signing and encryption cost'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from tune" -f -a "plan" -d 'Show the changes the findings imply: old -> new, why, risk'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from tune" -f -a "apply" -d 'Apply the plan: journal old values, write runtime values and persistence'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from tune" -f -a "rollback" -d 'Restore what a session (default: the latest) changed'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from tune" -f -a "verify" -d 'Check each owned setting: applied, drifted or unsupported'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from tune" -f -a "confirm" -d 'Keep the network changes of a session (stops the dead-man timer)'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from tune" -f -a "try" -d 'Measure a workload without and with one change; keep it only if it beats the noise'
complete -c nastune -n "__fish_nastune_using_subcommand help; and __fish_seen_subcommand_from tune" -f -a "export" -d 'Write the plan as a sysctl.d file, udev rules, a TuneD profile or Ansible tasks'
