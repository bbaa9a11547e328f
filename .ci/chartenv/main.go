// Command chartenv runs `orderly check` on the configuration the Helm
// chart gives a node: it reads manifests rendered by helm template, takes
// the orderly container of each Deployment, and builds its environment as
// the kubelet would (downward API fields, Secret keys, $(VAR) references),
// with its mounted files (the ConfigMap's orderly.yaml, TLS Secrets as a
// throwaway CA and certificate) laid out in a temporary directory. The
// node's own validation then says whether it would start with it: the
// bind addresses, the token a non-loopback HTTP bind needs, the gossip key,
// the Redis URL and its TLS files, the actor remote's settings.
//
// Secrets the chart does not render (existingSecret) get stand-ins: a valid
// gossip key, a redis:// URL, a token.
//
//	go run ./.ci/chartenv -orderly bin/orderly rendered.yaml
package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

type object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Template struct {
			Spec struct {
				Containers []container `yaml:"containers"`
				Volumes    []volume    `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type container struct {
	Name string `yaml:"name"`
	Env  []struct {
		Name      string  `yaml:"name"`
		Value     *string `yaml:"value"`
		ValueFrom *struct {
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
			SecretKeyRef *struct {
				Name     string `yaml:"name"`
				Key      string `yaml:"key"`
				Optional bool   `yaml:"optional"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
	} `yaml:"volumeMounts"`
}

type volume struct {
	Name      string `yaml:"name"`
	ConfigMap *struct {
		Name string `yaml:"name"`
	} `yaml:"configMap"`
	Secret *struct {
		SecretName string `yaml:"secretName"`
	} `yaml:"secret"`
}

func main() {
	orderly := flag.String("orderly", "bin/orderly", "the orderly binary")
	flag.StringVar(&redisStandIn, "redis", redisStandIn, "Redis URL standing in for a Redis Secret the chart does not render")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: chartenv -orderly BIN rendered.yaml")
		os.Exit(2)
	}
	if err := run(*orderly, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "chartenv:", err)
		os.Exit(1)
	}
}

func run(orderly, manifests string) error {
	raw, err := os.ReadFile(manifests)
	if err != nil {
		return err
	}
	var objs []object
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var o object
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("%s: %w", manifests, err)
		}
		objs = append(objs, o)
	}
	secrets, configMaps := map[string]map[string]string{}, map[string]map[string]string{}
	for _, o := range objs {
		switch o.Kind {
		case "Secret":
			secrets[o.Metadata.Name] = o.Data
		case "ConfigMap":
			configMaps[o.Metadata.Name] = o.Data
		}
	}
	checked := 0
	for _, o := range objs {
		if o.Kind != "Deployment" {
			continue
		}
		for _, c := range o.Spec.Template.Spec.Containers {
			if c.Name != "orderly" {
				continue
			}
			if err := check(orderly, o, c, secrets, configMaps); err != nil {
				return fmt.Errorf("%s, Deployment %s: %w", manifests, o.Metadata.Name, err)
			}
			checked++
		}
	}
	if checked == 0 {
		return fmt.Errorf("%s: no Deployment with an orderly container", manifests)
	}
	return nil
}

var ref = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func check(orderly string, d object, c container, secrets, configMaps map[string]map[string]string) error {
	root, err := os.MkdirTemp("", "chartenv")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)

	paths, err := mounts(root, d, c, configMaps)
	if err != nil {
		return err
	}

	vars := map[string]string{}
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		var val string
		switch {
		case e.Value != nil:
			val = ref.ReplaceAllStringFunc(*e.Value, func(s string) string {
				if v, ok := vars[s[2:len(s)-1]]; ok {
					return v
				}
				return s
			})
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "status.podIP":
				val = "10.0.0.10"
			case "metadata.name":
				val = d.Metadata.Name + "-5d9c7b6f4-x2x7q"
			default:
				return fmt.Errorf("%s: field %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			r := e.ValueFrom.SecretKeyRef
			data, rendered := secrets[r.Name]
			b64, ok := data[r.Key]
			switch {
			case ok:
				b, err := base64.StdEncoding.DecodeString(b64)
				if err != nil {
					return fmt.Errorf("%s: Secret %s, key %s: %w", e.Name, r.Name, r.Key, err)
				}
				val = string(b)
			case rendered && r.Optional:
				continue
			case rendered:
				return fmt.Errorf("%s: Secret %s has no key %s", e.Name, r.Name, r.Key)
			default: // an existing Secret: a stand-in
				val = standIn(e.Name)
			}
		default:
			return fmt.Errorf("%s: no value", e.Name)
		}
		val = paths.Replace(val)
		vars[e.Name] = val
		env = append(env, e.Name+"="+val)
	}
	cmd := exec.Command(orderly, "check")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	fmt.Printf("chartenv: %s: orderly check with the chart's environment (%d variables):\n%s", d.Metadata.Name, len(c.Env), indent(string(out)))
	if err != nil {
		return fmt.Errorf("orderly check: %w", err)
	}
	return nil
}

var redisStandIn = "redis://redis:6379/0"

// standIn is the value of the variable name when its Secret is not rendered.
// mounts lays the container's mounted files out under root and returns
// what rewrites their paths there.
func mounts(root string, d object, c container, configMaps map[string]map[string]string) (*strings.Replacer, error) {
	// The mounted files, under root.
	volumes := map[string]volume{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	var moves []string // mountPath, local path, ...
	for _, m := range c.VolumeMounts {
		v := volumes[m.Name]
		local := filepath.Join(root, m.MountPath)
		switch {
		case v.ConfigMap != nil:
			data, ok := configMaps[v.ConfigMap.Name]
			if !ok {
				return nil, fmt.Errorf("volume %s: ConfigMap %s is not rendered", m.Name, v.ConfigMap.Name)
			}
			if m.SubPath != "" {
				if err := write(local, data[m.SubPath]); err != nil {
					return nil, err
				}
			} else {
				for k, s := range data {
					if err := write(filepath.Join(local, k), s); err != nil {
						return nil, err
					}
				}
			}
		case v.Secret != nil:
			if err := tlsFiles(local); err != nil {
				return nil, err
			}
		default:
			if err := os.MkdirAll(local, 0o755); err != nil {
				return nil, err
			}
		}
		moves = append(moves, m.MountPath, local)
	}
	return strings.NewReplacer(moves...), nil
}

func standIn(name string) string {
	switch name {
	case "ORDERLY_GOSSIP_KEY":
		return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	case "ORDERLY_REDIS":
		return redisStandIn
	}
	return "stand-in-" + strings.ToLower(name)
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

func write(path, data string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(data), 0o600)
}

// tlsFiles writes what a kubernetes.io/tls Secret with a CA holds: ca.crt,
// tls.crt and tls.key, a throwaway self-signed certificate.
func tlsFiles(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "chartenv"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	cert := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	for name, data := range map[string]string{
		"ca.crt":  cert,
		"tls.crt": cert,
		"tls.key": string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})),
	} {
		if err := write(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	return nil
}
