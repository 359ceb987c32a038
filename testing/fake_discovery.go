package testing

import (
	"encoding/json"
	"mime"
	"net/http"
	"sort"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/version"
)

// verbs a fake cluster allows on every kind it serves.
var (
	objectVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	statusVerbs = metav1.Verbs{"get", "patch", "update"}
)

// discoveryHandler answers discovery (/api and /apis aggregated, in the
// apidiscovery.k8s.io/v2 format, when the client accepts it, legacy
// otherwise; each group version's resource list), /version and the health
// checks, from what api serves.
func discoveryHandler(api *fakeAPI) http.Handler {
	mux := http.NewServeMux()
	for _, p := range []string{"/readyz", "/healthz", "/livez"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	}
	mux.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, fakeVersionInfo()) })
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		if acceptsAggregated(r) {
			writeAggregated(w, aggregated(api.all(), true))
			return
		}
		writeJSON(w, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
			},
		})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, r *http.Request) {
		if acceptsAggregated(r) {
			writeAggregated(w, aggregated(api.all(), false))
			return
		}
		writeJSON(w, groupList(api.all()))
	})
	mux.HandleFunc("/api/{version}", func(w http.ResponseWriter, r *http.Request) {
		serveResources(w, api, schema.GroupVersion{Version: r.PathValue("version")})
	})
	mux.HandleFunc("/apis/{group}/{version}", func(w http.ResponseWriter, r *http.Request) {
		serveResources(w, api, schema.GroupVersion{Group: r.PathValue("group"), Version: r.PathValue("version")})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		notFound(w, "a fake cluster serves discovery only, not "+r.URL.Path)
	})
	return mux
}

func notFound(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(&metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound,
		Message: msg,
	})
}

func fakeVersionInfo() version.Info { return fakeVersion }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// groupList is /apis: every named group with its versions, the highest
// priority version preferred.
func groupList(kinds []apiKind) *metav1.APIGroupList {
	versions := map[string]sets.Set[string]{}
	for _, k := range kinds {
		if k.gvk.Group == "" {
			continue
		}
		if versions[k.gvk.Group] == nil {
			versions[k.gvk.Group] = sets.New[string]()
		}
		versions[k.gvk.Group].Insert(k.gvk.Version)
	}
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for group, vs := range versions {
		ordered := sets.List(vs)
		sort.Slice(ordered, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(ordered[i], ordered[j]) > 0 })
		g := metav1.APIGroup{Name: group}
		for _, v := range ordered {
			g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + v, Version: v})
		}
		g.PreferredVersion = g.Versions[0]
		list.Groups = append(list.Groups, g)
	}
	sort.Slice(list.Groups, func(i, j int) bool { return list.Groups[i].Name < list.Groups[j].Name })
	return list
}

// serveResources is /api/v1 or /apis/<group>/<version>: the kinds served
// there and their status subresources; 404 for a group version not served.
func serveResources(w http.ResponseWriter, api *fakeAPI, gv schema.GroupVersion) {
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, k := range api.all() {
		if k.gvk.GroupVersion() != gv {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: k.plural, SingularName: k.singular, Namespaced: k.namespaced, Kind: k.gvk.Kind,
			Verbs: objectVerbs, ShortNames: k.shortNames,
		})
		if k.status {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: k.plural + "/status", Namespaced: k.namespaced, Kind: k.gvk.Kind, Verbs: statusVerbs,
			})
		}
	}
	if len(list.APIResources) == 0 {
		notFound(w, "group version "+gv.String()+" is not served")
		return
	}
	sort.Slice(list.APIResources, func(i, j int) bool { return list.APIResources[i].Name < list.APIResources[j].Name })
	writeJSON(w, list)
}

// aggregatedContentType is the media type of aggregated discovery, v2.
const aggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

func acceptsAggregated(r *http.Request) bool {
	for _, accept := range r.Header.Values("Accept") {
		for _, part := range strings.Split(accept, ",") {
			base, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && base == "application/json" && params["g"] == apidiscoveryv2.SchemeGroupVersion.Group &&
				params["v"] == apidiscoveryv2.SchemeGroupVersion.Version && params["as"] == "APIGroupDiscoveryList" {
				return true
			}
		}
	}
	return false
}

func writeAggregated(w http.ResponseWriter, list *apidiscoveryv2.APIGroupDiscoveryList) {
	w.Header().Set("Content-Type", aggregatedContentType)
	_ = json.NewEncoder(w).Encode(list)
}

// aggregated is /api (core only) or /apis (named groups) in the aggregated
// format: every group, its versions highest priority first, their
// resources and status subresources.
func aggregated(kinds []apiKind, core bool) *apidiscoveryv2.APIGroupDiscoveryList {
	byGroup := map[string]map[string][]apiKind{}
	for _, k := range kinds {
		if (k.gvk.Group == "") != core {
			continue
		}
		if byGroup[k.gvk.Group] == nil {
			byGroup[k.gvk.Group] = map[string][]apiKind{}
		}
		byGroup[k.gvk.Group][k.gvk.Version] = append(byGroup[k.gvk.Group][k.gvk.Version], k)
	}
	list := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{
		Kind: "APIGroupDiscoveryList", APIVersion: apidiscoveryv2.SchemeGroupVersion.String(),
	}}
	for group, versions := range byGroup {
		g := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: group}}
		for _, v := range sortedVersions(versions) {
			g.Versions = append(g.Versions, apidiscoveryv2.APIVersionDiscovery{
				Version: v, Resources: resourceDiscovery(versions[v]), Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
			})
		}
		list.Items = append(list.Items, g)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list
}

func sortedVersions(versions map[string][]apiKind) []string {
	out := make([]string, 0, len(versions))
	for v := range versions {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(out[i], out[j]) > 0 })
	return out
}

func resourceDiscovery(kinds []apiKind) []apidiscoveryv2.APIResourceDiscovery {
	out := make([]apidiscoveryv2.APIResourceDiscovery, 0, len(kinds))
	for _, k := range kinds {
		gvk := metav1.GroupVersionKind{Group: k.gvk.Group, Version: k.gvk.Version, Kind: k.gvk.Kind}
		scope := apidiscoveryv2.ScopeCluster
		if k.namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		r := apidiscoveryv2.APIResourceDiscovery{
			Resource: k.plural, SingularResource: k.singular, ResponseKind: &gvk, Scope: scope,
			Verbs: objectVerbs, ShortNames: k.shortNames,
		}
		if k.status {
			r.Subresources = []apidiscoveryv2.APISubresourceDiscovery{{Subresource: "status", ResponseKind: &gvk, Verbs: statusVerbs}}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}
