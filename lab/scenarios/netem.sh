# lab-about: two network namespaces joined by veth, netem delay/loss and a tbf rate on both ends
# lab-disks: 0
#
# lab-a (10.77.0.1, dev va) <-> lab-b (10.77.0.2, dev vb). Each end's egress has
#   netem delay $LAB_NETEM_DELAY loss $LAB_NETEM_LOSS, and under it tbf rate $LAB_TBF_RATE,
# so no round trip is shorter than twice the delay. Override with `lab/run --env LAB_NETEM_DELAY=50ms`.
# Commands run in the root namespace; use `ip netns exec lab-a CMD` to run in one end,
# e.g. a server in lab-b (backgrounded with &) and a client in lab-a.
# Commands get LAB_NS_A, LAB_NS_B, LAB_ADDR_A, LAB_ADDR_B, LAB_DEV_A, LAB_DEV_B and the
# measured LAB_MIN_RTT_BEFORE_MS and LAB_MIN_RTT_AFTER_MS.

DELAY=${LAB_NETEM_DELAY:-20ms}
LOSS=${LAB_NETEM_LOSS:-0.5%}
RATE=${LAB_TBF_RATE:-50mbit}

min_rtt_ms() { # ping summary on stdin -> minimum RTT in ms
    awk -F'[=/ ]+' '/min\/avg\/max/{print $(NF-3)}'
}

setup() {
    set -x
    ip netns add lab-a
    ip netns add lab-b
    ip link add va type veth peer name vb
    ip link set va netns lab-a
    ip link set vb netns lab-b
    ip -n lab-a addr add 10.77.0.1/24 dev va
    ip -n lab-b addr add 10.77.0.2/24 dev vb
    for ns in lab-a lab-b; do ip -n $ns link set lo up; done
    ip -n lab-a link set va up
    ip -n lab-b link set vb up
    before=$(ip netns exec lab-a ping -c 5 -i 0.2 -W 2 10.77.0.2 | tee "$LAB_RESULT/ping-before.txt" | min_rtt_ms)
    for end in lab-a:va lab-b:vb; do
        ns=${end%:*} dev=${end#*:}
        ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: netem delay "$DELAY" loss "$LOSS"
        ip netns exec "$ns" tc qdisc add dev "$dev" parent 1: handle 2: tbf rate "$RATE" burst 32kbit latency 400ms
    done
    after=$(ip netns exec lab-a ping -c 10 -i 0.2 -W 3 10.77.0.2 | tee "$LAB_RESULT/ping-after.txt" | min_rtt_ms)
    set +x
    delay_ms=$(echo "$DELAY" | awk '/ms$/{print $0+0; next} /us$/{print ($0+0)/1000; next} /s$/{print ($0+0)*1000; next} {print $0+0}')
    echo "minimum rtt before ${before} ms, after ${after} ms, netem delay ${delay_ms} ms each way"
    # netem holds every packet for the delay in both directions (no jitter here), so no
    # round trip can be shorter than twice the delay, however loaded the emulated CPU is.
    echo "$after $delay_ms" | awk '{exit !($1 >= 2 * $2)}' ||
        lab_fail "minimum RTT ${after} ms is below 2 x ${delay_ms} ms: netem delay not applied"
    lab_view qdisc-a ip netns exec lab-a tc -s qdisc show dev va
    lab_view qdisc-b ip netns exec lab-b tc -s qdisc show dev vb
    lab_export LAB_NS_A lab-a
    lab_export LAB_NS_B lab-b
    lab_export LAB_ADDR_A 10.77.0.1
    lab_export LAB_ADDR_B 10.77.0.2
    lab_export LAB_DEV_A va
    lab_export LAB_DEV_B vb
    lab_export LAB_MIN_RTT_BEFORE_MS "$before"
    lab_export LAB_MIN_RTT_AFTER_MS "$after"
}

teardown() {
    ip netns del lab-a
    ip netns del lab-b
}
