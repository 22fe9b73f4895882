package directives

// The deprecated names are exercised from inside the package, where using them is not
// a deprecation warning.

import (
	"reflect"
	"testing"
)

// Compile-time identity: an alias, not a second type. Both assignments compile without
// a conversion only because RolePolicy and RolePromptDirectives are one type.
var (
	_ RolePolicy              = RolePromptDirectives{}
	_ RolePromptDirectives    = RolePolicy{}
	_ func(RolePolicy) string = Render
)

func TestRolePolicyIsRolePromptDirectives(t *testing.T) {
	if reflect.TypeFor[RolePolicy]() != reflect.TypeFor[RolePromptDirectives]() {
		t.Fatal("RolePolicy is not the same type as RolePromptDirectives")
	}
	if got := reflect.TypeFor[RolePolicy]().Name(); got != "RolePromptDirectives" {
		t.Errorf("RolePolicy's type is named %q", got)
	}
}

func TestDeprecatedReadAliases(t *testing.T) {
	p, err := ParsePack("p.yaml", []byte("roles:\n  a:\n    authority: [x]\n"))
	if err != nil {
		t.Fatal(err)
	}
	// Policies returns the very same map, not a copy.
	if reflect.ValueOf(p.Policies()).UnsafePointer() != reflect.ValueOf(p.Directives).UnsafePointer() {
		t.Error("Policies() is not the Directives map")
	}
	got, ok := p.Policy("a")
	want, wok := p.PromptDirectives("a")
	if ok != wok || !reflect.DeepEqual(got, want) {
		t.Errorf("Policy(a) = %+v %v, PromptDirectives(a) = %+v %v", got, ok, want, wok)
	}
	if _, ok := p.Policy("missing"); ok {
		t.Error("Policy reports a missing role")
	}
	var nilPack *Pack
	if nilPack.Policies() != nil {
		t.Error("nil pack has policies")
	}
}
