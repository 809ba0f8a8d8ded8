/**
 * Modules whose package on PyPI has another name: the package to list for `import <module>`. The
 * common ones a model imports; any other is taken as its own package's name.
 */
export const MODULE_PACKAGES: Readonly<Record<string, string>> = {
  cv2: "opencv-python-headless",
  PIL: "pillow",
  sklearn: "scikit-learn",
  skimage: "scikit-image",
  yaml: "pyyaml",
  bs4: "beautifulsoup4",
  dateutil: "python-dateutil",
  dotenv: "python-dotenv",
  jwt: "PyJWT",
  google: "protobuf",
  Crypto: "pycryptodome",
  fitz: "PyMuPDF",
  docx: "python-docx",
  magic: "python-magic",
  attr: "attrs",
  faiss: "faiss-cpu",
  sentencepiece: "sentencepiece",
  tflite_runtime: "tflite-runtime",
  multipart: "python-multipart",
  serial: "pyserial",
  OpenSSL: "pyOpenSSL",
  Levenshtein: "python-Levenshtein",
};

/** What to list in requirements.txt for a missing module: its package, said apart when the name differs. */
export function packageFor(module: string): { package: string; differs: boolean } {
  const top = module.split(".")[0]!;
  const pkg = MODULE_PACKAGES[top];
  return pkg && pkg !== top ? { package: pkg, differs: true } : { package: top, differs: false };
}
