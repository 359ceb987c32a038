package testing

import (
	"encoding/json"
	"net/http"
	"sort"

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

// discoveryHandler answers the legacy (unaggregated) discovery endpoints,
// /version and the health checks from what api serves. client-go's
// discovery client falls back to legacy discovery when a server does not
// answer in the aggregated format, as old API servers do not.
func discoveryHandler(api *fakeAPI) http.Handler {
	mux := http.NewServeMux()
	for _, p := range []string{"/readyz", "/healthz", "/livez"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	}
	mux.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, fakeVersionInfo()) })
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
			},
		})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, groupList(api.all())) })
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
