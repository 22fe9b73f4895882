package gateway

import (
	"errors"
	"fmt"
	"net/netip"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden/internal/clientaddr"
	"github.com/wardenhq/warden/internal/yamlstrict"
)

// trustedProxies decodes trusted_proxies: a list of IP addresses and CIDRs (see
// [clientaddr.ParsePrefix] for what is refused). An entry listed twice is an error.
func (d *configDecoder) trustedProxies(n *yaml.Node) []netip.Prefix {
	if n.Kind != yaml.SequenceNode {
		d.Fail(n, "write a list of your reverse proxies' addresses or CIDRs, e.g. [10.0.0.0/8, 2001:db8::5]",
			"trusted_proxies must be a list, not %s", yamlstrict.KindName(n))
		return nil
	}
	out := make([]netip.Prefix, 0, len(n.Content))
	seen := map[netip.Prefix]int{}
	for i, item := range n.Content {
		where := fmt.Sprintf("trusted_proxies[%d]", i)
		s, ok := d.Str(item, where)
		if !ok {
			continue
		}
		p, err := clientaddr.ParsePrefix(s)
		if e := (*clientaddr.EntryError)(nil); errors.As(err, &e) {
			d.Fail(item, e.Fix, "%s: %v", where, e)
			continue
		}
		if j, ok := seen[p]; ok {
			d.Fail(item, "remove one of them", "%s: %q is trusted_proxies[%d] again (%s)", where, s, j, p)
			continue
		}
		seen[p] = i
		out = append(out, p)
	}
	return out
}
