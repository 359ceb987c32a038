package krodiff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// KroModuleDir returns the directory of the kro module this module
// requires, in the module cache.
func KroModuleDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kubernetes-sigs/kro").Output()
	if err != nil {
		return "", fmt.Errorf("locating the kro module (go list -m): %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("locating the kro module: not downloaded (run go mod download)")
	}
	return dir, nil
}

// RGDCRDs returns kro's ResourceGraphDefinition CRD, read from kro's
// module, and fleetgraph's, moved to MirrorGroup.
func RGDCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dir, err := KroModuleDir()
	if err != nil {
		return nil, err
	}
	kro, err := ReadCRD(filepath.Join(dir, "helm", "crds", "kro.run_resourcegraphdefinitions.yaml"))
	if err != nil {
		return nil, err
	}
	fg, err := v1alpha1.CRD()
	if err != nil {
		return nil, err
	}
	fg.Spec.Group = MirrorGroup
	fg.Name = fg.Spec.Names.Plural + "." + MirrorGroup
	return []*apiextensionsv1.CustomResourceDefinition{kro, fg}, nil
}

// ReadCRD reads one CRD manifest.
func ReadCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	return crd, nil
}

// InstallCRDs creates crds and waits until each is Established.
func InstallCRDs(ctx context.Context, cfg *rest.Config, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	c, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := c.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		crd = crd.DeepCopy()
		crd.ResourceVersion = ""
		if _, err := api.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for CRD %s to be established: %w", crd.Name, err)
		}
	}
	return nil
}

// kroExamplePrefix starts the names of kro's example RGDs.
const kroExamplePrefix = "kro/"

// Example is one RGD from kro's examples.
type Example struct {
	// Name is "kro/<path>", with "#n" for the n-th RGD of a file holding
	// several.
	Name string
	// Path is the file's path inside kro's module.
	Path string
	Raw  []byte
}

// KroExampleRGDs returns the RGDs in kro's examples/kubernetes and
// examples/graph, kroDir being kro's module directory.
func KroExampleRGDs(kroDir string) ([]Example, error) {
	var out []Example
	for _, root := range []string{"examples/kubernetes", "examples/graph"} {
		err := filepath.WalkDir(filepath.Join(kroDir, root), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			rel, err := filepath.Rel(kroDir, path)
			if err != nil {
				return err
			}
			docs, err := rgdDocuments(path)
			if err != nil {
				return err
			}
			for i, doc := range docs {
				name := kroExamplePrefix + filepath.ToSlash(rel)
				if len(docs) > 1 {
					name += fmt.Sprintf("#%d", i+1)
				}
				out = append(out, Example{Name: name, Path: rel, Raw: doc})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading kro's examples: %w", err)
		}
	}
	return out, nil
}

// rgdDocuments returns the ResourceGraphDefinition documents of a YAML
// file, each as JSON.
func rgdDocuments(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var out [][]byte
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if doc["kind"] != "ResourceGraphDefinition" {
			continue
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
}
