package gateway_test

import (
	"net/netip"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wardenhq/warden/gateway"
)

const proxiesBase = "policy: p.yaml\nlisten: 127.0.0.1:8080\nclients:\n  - principal: reader-agent\n    token_env: READER_TOKEN\n"

func TestParseConfigTrustedProxies(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"absent", "", nil},
		{"empty list", "trusted_proxies: []\n", []string{}},
		{"block list", "trusted_proxies:\n  - 10.0.0.0/8\n  - 192.0.2.7\n  - 2001:db8::/32\n  - ::1\n  - \"::ffff:198.51.100.0/120\"\n",
			[]string{"10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32", "::1/128", "198.51.100.0/24"}},
		{"flow list", "trusted_proxies: [10.0.0.0/8, '2001:db8::5']\n", []string{"10.0.0.0/8", "2001:db8::5/128"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := gateway.ParseFile(file, []byte(proxiesBase+c.yaml), cfgGetenv)
			if err != nil {
				t.Fatal(err)
			}
			var want []netip.Prefix
			if c.want != nil {
				want = []netip.Prefix{}
			}
			for _, s := range c.want {
				want = append(want, netip.MustParsePrefix(s))
			}
			if !slices.Equal(got.TrustedProxies, want) || (got.TrustedProxies == nil) != (want == nil) {
				t.Errorf("TrustedProxies = %v, want %v", got.TrustedProxies, want)
			}
		})
	}
}

// Each bad entry is reported at its line with its position in the list, what is
// wrong and how to write it, and every bad entry is reported.
func TestParseConfigTrustedProxiesErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	const fix = "write an address such as 10.0.0.5 or 2001:db8::5, or a CIDR such as 10.0.0.0/8 or 2001:db8::/32"
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"not a CIDR", "trusted_proxies:\n  - 10.0.0.1\n  - 10.0.0/8\n", []string{
			file + `:8:5: trusted_proxies[1]: "10.0.0/8" is not an IP address or CIDR (` + fix + ")"}},
		{"several bad entries", "trusted_proxies: [proxy.internal, 10.0.0.0/8, 10.1.2.3/8, 0.0.0.0/0, '::/0', fe80::1%eth0, 10.0.0.1:443]\n", []string{
			file + `:6:19: trusted_proxies[0]: "proxy.internal" is not an IP address or CIDR (` + fix + ")",
			file + `:6:47: trusted_proxies[2]: "10.1.2.3/8" has address bits set past its /8 (write 10.0.0.0/8 for the network or 10.1.2.3/32 for the one address)`,
			file + `:6:59: trusted_proxies[3]: "0.0.0.0/0" trusts every address, so any client could claim any address (list only the addresses or networks of your reverse proxies)`,
			file + `:6:70: trusted_proxies[4]: "::/0" trusts every address, so any client could claim any address (list only the addresses or networks of your reverse proxies)`,
			file + `:6:78: trusted_proxies[5]: "fe80::1%eth0" has a zone, which a proxy's address is never matched with (leave out the %zone)`,
			file + `:6:92: trusted_proxies[6]: "10.0.0.1:443" is not an IP address or CIDR (` + fix + ")"}},
		{"listed twice", "trusted_proxies:\n  - 10.0.0.0/8\n  - 192.0.2.7\n  - ::ffff:10.0.0.0/104\n", []string{
			file + `:9:5: trusted_proxies[2]: "::ffff:10.0.0.0/104" is trusted_proxies[0] again (10.0.0.0/8) (remove one of them)`}},
		{"a number", "trusted_proxies: [10]\n", []string{
			file + `:6:19: trusted_proxies[0] must be a string, got a number (quote it to make it a string)`}},
		{"a string", "trusted_proxies: 10.0.0.0/8\n", []string{
			file + `:6:18: trusted_proxies must be a list, not a string (write a list of your reverse proxies' addresses or CIDRs, e.g. [10.0.0.0/8, 2001:db8::5])`}},
		{"null", "trusted_proxies:\n", []string{
			file + `:6:17: trusted_proxies must be a list, not null (write a list of your reverse proxies' addresses or CIDRs, e.g. [10.0.0.0/8, 2001:db8::5])`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := gateway.ParseFile(file, []byte(proxiesBase+c.yaml), cfgGetenv)
			if err == nil {
				t.Fatalf("no error; want %q", c.want)
			}
			var got []string
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					got = append(got, e.Error())
				}
			} else {
				got = []string{err.Error()}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("errors:\n%q\nwant:\n%q", got, c.want)
			}
		})
	}
	// Without an HTTP front there is nothing to stand behind a proxy.
	_, err := gateway.ParseFile(file, []byte("policy: p.yaml\ntrusted_proxies: [10.0.0.0/8]\n"), cfgGetenv)
	want := file + ":1:1: trusted_proxies is for the HTTP front, but no listen address is set (add `listen: 127.0.0.1:8080` or remove trusted_proxies)"
	if err == nil || err.Error() != want {
		t.Errorf("without listen: %v, want %q", err, want)
	}
}
