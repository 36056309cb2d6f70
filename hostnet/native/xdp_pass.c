/* hostnet's XDP program: every packet passes (XDP_PASS is 2 in linux/bpf.h).
 *
 * Its only purpose is a side effect: a veth device with a native XDP program attached runs its
 * receive path in NAPI, as a NIC driver does, even with GRO off. hostnet attaches it (knobs/xdp.py)
 * for the receive path "napi-thread" at ladder steps without GRO. Built with clang -target bpf.
 * The "xdp.frags" section declares it multi-buffer aware, so veth accepts it with a 9000-byte MTU.
 */
#define XDP_PASS 2

__attribute__((section("xdp.frags"), used)) int hostnet_pass(void *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

char _license[] __attribute__((section("license"), used)) = "GPL";
