"""template.yaml, translated offline by aws-sam-translator and linted by cfn-lint.

A broken copy of the template must fail the same check, or the check proves nothing.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from local.page import content_security_policy, security_headers
from local.sam_template import TEMPLATE_PATH, check_template, load_template, packaged, translate
from sstools_agent.chat.approval_routes import SECOND_DECISION_PATH
from sstools_agent.http.observability import METRICS_NAMESPACE, MetricName
from sstools_agent.http.origin import ORIGIN_VERIFY_HEADER
from sstools_agent.http.snapstart import AFTER_RESTORE_PATH, BEFORE_CHECKPOINT_PATH
from sstools_agent.settings import CheckpointSettings


def test_the_template_passes_the_check():
    assert check_template() == []


def layer_resources() -> dict[str, dict[str, Any]]:
    resources = load_template()["Resources"].items()
    return {name: r for name, r in resources if r["Type"] == "AWS::Serverless::LayerVersion"}


def test_each_layer_translates_to_a_python312_layer_version_per_architecture():
    template, missing = packaged(load_template(), TEMPLATE_PATH.parent)
    assert missing == []
    resources = translate(template)["Resources"]
    layers = [r for r in resources.values() if r["Type"] == "AWS::Lambda::LayerVersion"]
    # Core, chat and the two add-ons, one per architecture each, created only when the stack
    # deploys that architecture (and, for an add-on, the provider that needs it)
    assert (
        sorted(layer["Properties"]["CompatibleArchitectures"][0] for layer in layers)
        == ["arm64"] * 4 + ["x86_64"] * 4
    )
    conditions = load_template()["Conditions"]
    for layer in layers:
        assert layer["Properties"]["CompatibleRuntimes"] == ["python3.12"]
        (architecture,) = layer["Properties"]["CompatibleArchitectures"]
        condition = conditions[layer["Condition"]]
        if "Fn::And" in condition:
            architecture_condition, provider_condition = condition["Fn::And"]
            assert provider_condition["Condition"] in {"UsesOpenAi", "UsesOfflineEncoder"}
            condition = conditions[architecture_condition["Condition"]]
        assert condition == {"Fn::Equals": [{"Ref": "Architecture"}, architecture]}


@pytest.mark.parametrize("name", sorted(n for n in layer_resources() if n.startswith("CoreLayer")))
def test_the_core_layer_build_ships_the_package_with_compiled_bytecode(tmp_path, name):
    # Given the layer as SAM builds it (BuildMethod makefile runs build-<LogicalId> in ContentUri)
    layer = layer_resources()[name]
    assert layer["Metadata"]["BuildMethod"] == "makefile"
    (architecture,) = layer["Properties"]["CompatibleArchitectures"]
    assert layer["Metadata"]["BuildArchitecture"] == architecture
    content = TEMPLATE_PATH.parent / layer["Properties"]["ContentUri"]
    assert (content / "requirements.txt").is_file()
    # When the build runs (dependencies skipped: tests/infrastructure/test_sam_build.py runs them)
    python = subprocess.run(
        [TEMPLATE_PATH.parent / "scripts" / "find-python"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run(
        [
            "make",
            "-C",
            str(content),
            f"build-{name}",
            f"ARTIFACTS_DIR={tmp_path}",
            "SKIP_DEPENDENCIES=1",
            f"PYTHON={python}",
        ],
        check=True,
        capture_output=True,
    )
    # Then every module of the package is there with its bytecode, for the build's Python
    package = tmp_path / "python" / "sstools_agent"
    modules = sorted(
        p.relative_to(content / "sstools_agent") for p in (content / "sstools_agent").rglob("*.py")
    )
    assert sorted(p.relative_to(package) for p in package.rglob("*.py")) == modules
    compiled = list(package.rglob("__pycache__/*.pyc"))
    assert len(compiled) == len(modules)


def broken_copy(tmp_path: Path, edit) -> Path:
    """A copy of the template (with its folders linked) after `edit` changed its text."""
    text = TEMPLATE_PATH.read_text(encoding="utf-8")
    copy = tmp_path / "template.yaml"
    copy.write_text(edit(text), encoding="utf-8")
    (tmp_path / "layers").symlink_to(TEMPLATE_PATH.parent / "layers")
    return copy


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        # A runtime Lambda does not have, inside a SAM resource
        (lambda t: t.replace("        - python3.12\n", "        - python3.99\n"), "python3.99"),
        # An output that references nothing
        (
            lambda t: t.replace(
                "Value: !If [IsArm64, !Ref CoreLayerArm64",
                "Value: !If [IsArm64, !Ref NoSuchLayer",
            ),
            "NoSuchLayer",
        ),
        # A property the SAM layer does not have
        (
            lambda t: t.replace("      RetentionPolicy: Retain", "      RetentionPolicy: Forever"),
            "RetentionPolicy",
        ),
        # Code that is not there
        (lambda t: t.replace("ContentUri: layers/common/", "ContentUri: layers/gone/"), "gone"),
        # A parameter nobody uses
        (
            lambda t: t.replace(
                "Parameters:\n", "Parameters:\n  Unused:\n    Type: String\n    Default: x\n"
            ),
            "Unused",
        ),
    ],
    ids=["runtime", "dangling-ref", "sam-property", "missing-code", "unused-parameter"],
)
def test_a_broken_template_fails_the_check(tmp_path, edit, expected):
    problems = check_template(broken_copy(tmp_path, edit))
    assert problems, "the check passed a broken template"
    assert any(expected in problem for problem in problems), problems


# The /agent page and the API on one origin (CloudFront). Managed policies are fixed ids.
CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
CACHING_OPTIMIZED = "658327ea-f89d-4fab-a63d-7e88639e58f6"
ALL_VIEWER_EXCEPT_HOST_HEADER = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
ORIGIN_SECRET = {"Fn::Sub": "{{resolve:secretsmanager:${OriginVerifySecret}:SecretString}}"}


@functools.cache
def cloudformation() -> dict[str, Any]:
    """The template as CloudFormation receives it (after the SAM transform)."""
    template, _ = packaged(load_template(), TEMPLATE_PATH.parent)
    return translate(template)


def resource(name: str) -> dict[str, Any]:
    properties: dict[str, Any] = cloudformation()["Resources"][name]["Properties"]
    return properties


def distribution() -> dict[str, Any]:
    config: dict[str, Any] = resource("PageDistribution")["DistributionConfig"]
    return config


def origin(origin_id: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [o for o in distribution()["Origins"] if o["Id"] == origin_id]
    (only,) = found
    return only


def behaviour(path: str) -> dict[str, Any]:
    """The cache behaviour CloudFront picks for `path`: the first whose pattern matches, in the
    order given (`*` any characters, `?` one, case-sensitive), else the default."""
    for candidate in distribution()["CacheBehaviors"]:
        if fnmatch.fnmatchcase(path, candidate["PathPattern"]):
            return candidate  # type: ignore[no-any-return]
    return distribution()["DefaultCacheBehavior"]  # type: ignore[no-any-return]


def every_behaviour() -> list[dict[str, Any]]:
    return [*distribution()["CacheBehaviors"], distribution()["DefaultCacheBehavior"]]


PAGE_PATHS = ["/agent/", "/agent/index.html", "/agent/config.json", "/agent/assets/index-3f9a.js"]
CHAT_PATHS = [
    "/api/agent/chat",
    "/api/agent/chat/cancel",
    "/api/agent/ag-ui",
    "/api/agent/gradio/config",
    "/api/agent/gradio/gradio_api/queue/join",
    "/api/agent/gradio/gradio_api/queue/data",
]
API_PATHS = [
    "/api/agent/conversations/c-1",
    "/api/assistant/confirmations/k-1",
    "/api/auth/service-token",
    "/.well-known/jwks.json",
]


def test_the_page_bucket_is_private_and_only_the_distribution_reads_it():
    bucket = resource("PageBucket")
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert bucket["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    (encryption,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    policy = resource("PageBucketPolicy")
    assert policy["Bucket"] == {"Ref": "PageBucket"}
    allowed = [s for s in policy["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    # One grant: CloudFront, reading objects under agent/, for this distribution only
    (grant,) = allowed
    assert grant["Principal"] == {"Service": "cloudfront.amazonaws.com"}
    assert grant["Action"] == "s3:GetObject"
    assert grant["Resource"] == {"Fn::Sub": "${PageBucket.Arn}/agent/*"}
    assert grant["Condition"] == {
        "StringEquals": {
            "AWS:SourceArn": {
                "Fn::Sub": "arn:${AWS::Partition}:cloudfront::${AWS::AccountId}"
                ":distribution/${PageDistribution}"
            }
        }
    }


@pytest.mark.parametrize("path", PAGE_PATHS)
def test_agent_paths_go_to_the_bucket_through_the_origin_access_control(path):
    chosen = behaviour(path)
    page = origin(chosen["TargetOriginId"])
    assert page["DomainName"] == {"Fn::GetAtt": ["PageBucket", "RegionalDomainName"]}
    assert page["S3OriginConfig"] == {"OriginAccessIdentity": ""}  # no legacy OAI
    assert page["OriginAccessControlId"] == {"Fn::GetAtt": ["PageOriginAccessControl", "Id"]}
    access = resource("PageOriginAccessControl")["OriginAccessControlConfig"]
    assert access["OriginAccessControlOriginType"] == "s3"
    assert access["SigningBehavior"] == "always"
    assert access["SigningProtocol"] == "sigv4"
    assert chosen["AllowedMethods"] == ["GET", "HEAD"]
    assert "OriginCustomHeaders" not in page  # the origin secret never goes to S3


def test_hashed_assets_are_cached_and_the_page_and_its_config_as_their_metadata_says():
    assert behaviour("/agent/assets/index-3f9a.js")["CachePolicyId"] == CACHING_OPTIMIZED
    for path in ["/agent/", "/agent/index.html", "/agent/config.json", "/agent/conversations/c"]:
        assert behaviour(path)["CachePolicyId"] == {"Ref": "PageCachePolicy"}
    policy = resource("PageCachePolicy")["CachePolicyConfig"]
    # Nothing is cached unless its Cache-Control says so (the upload: no-cache for the page)
    assert (policy["MinTTL"], policy["DefaultTTL"]) == (0, 0)
    key = policy["ParametersInCacheKeyAndForwardedToOrigin"]
    assert key["HeadersConfig"] == {"HeaderBehavior": "none"}  # S3 must get its own Host


def runs_the_router(candidate: dict[str, Any]) -> bool:
    return any(
        a["EventType"] == "viewer-request"
        and a["FunctionARN"] == {"Fn::GetAtt": ["PageRouterFunction", "FunctionARN"]}
        for a in candidate.get("FunctionAssociations", [])
    )


def test_only_page_behaviours_run_the_spa_fallback():
    assert runs_the_router(behaviour("/agent/conversations/c-1"))
    for candidate in every_behaviour():
        if candidate["TargetOriginId"] != "page":
            # API answers (a 404 included) pass untouched: no function, no custom error page
            assert "FunctionAssociations" not in candidate, candidate.get("PathPattern")
    assert "CustomErrorResponses" not in distribution()
    assert resource("PageRouterFunction")["FunctionConfig"]["Runtime"] == "cloudfront-js-2.0"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the function code")
@pytest.mark.parametrize(
    ("uri", "query", "expected"),
    [
        ("/agent/", {}, "/agent/index.html"),
        ("/agent/conversations/c-1", {}, "/agent/index.html"),
        ("/agent/index.html", {}, "/agent/index.html"),
        ("/agent/config.json", {}, "/agent/config.json"),
        ("/agent/assets/index-3f9a.js", {}, "/agent/assets/index-3f9a.js"),
        ("/favicon.ico", {}, "/favicon.ico"),
        ("/agent", {"objectType": {"value": "dashboard"}}, "/agent/index.html"),
        ("/", {}, "302 /agent"),
    ],
)
def test_the_spa_fallback_sends_page_routes_to_index_html_and_files_through(uri, query, expected):
    # Given the function's code as CloudFront runs it (a handler of the viewer request)
    code = resource("PageRouterFunction")["FunctionCode"]
    event = {"request": {"method": "GET", "uri": uri, "querystring": query, "headers": {}}}
    script = (
        f"{code}\nconst r = handler({json.dumps(event)});\n"
        "console.log(r.statusCode ? r.statusCode + ' ' + r.headers.location.value : r.uri);"
    )
    # When it runs on a request for `uri`
    result = subprocess.run(["node", "-e", script], check=True, capture_output=True, text=True)
    # Then the page's routes (/agent too) are the page, files are themselves, / goes to /agent
    assert result.stdout.strip() == expected


@pytest.mark.parametrize("path", CHAT_PATHS)
def test_the_chat_stream_goes_to_the_function_url_uncached_with_the_viewers_headers(path):
    chosen = behaviour(path)
    chat = origin(chosen["TargetOriginId"])
    assert chat["DomainName"] == {
        "Fn::Select": [2, {"Fn::Split": ["/", {"Fn::GetAtt": ["ChatFunctionUrl", "FunctionUrl"]}]}]
    }
    assert chat["CustomOriginConfig"]["OriginProtocolPolicy"] == "https-only"
    assert "OriginPath" not in chat  # the app's routes are the full paths
    assert chosen["CachePolicyId"] == CACHING_DISABLED
    # All viewer headers but Host: with caching disabled that includes Authorization (the user's
    # bearer token), Last-Event-ID, Idempotency-Key; and the body of the POST
    assert chosen["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST_HEADER
    assert "POST" in chosen["AllowedMethods"]
    assert chosen["Compress"] is False  # the stream's frames are not held back for gzip
    assert chosen["ViewerProtocolPolicy"] == "https-only"  # a redirect would drop the body


def test_the_function_url_is_not_signed_so_the_bearer_token_keeps_the_authorization_header():
    # An OAC on a Lambda origin would sign with Authorization, overwriting the user's JWT
    assert "OriginAccessControlId" not in origin("chat")
    url = resource("ChatFunctionUrl")
    assert url["AuthType"] == "NONE"
    assert url["InvokeMode"] == "RESPONSE_STREAM"


def test_the_origin_secret_goes_to_every_origin_that_reaches_the_chat_function():
    # CloudFront adds it to the function URL and to ChatApi (its chat routes invoke the function)
    for origin_id in ("chat", "api"):
        assert origin(origin_id)["OriginCustomHeaders"] == [
            {"HeaderName": "X-Origin-Verify", "HeaderValue": ORIGIN_SECRET}
        ]
    # and both functions are told the same value: the chat refuses requests without it, and
    # both believe CloudFront's viewer address only on requests with it
    for function in ("ChatFunction", "ApiFunction"):
        variables = resource(function)["Environment"]["Variables"]
        assert variables["ORIGIN_VERIFY_SECRET"] == ORIGIN_SECRET
    secret = resource("OriginVerifySecret")["GenerateSecretString"]
    assert secret["PasswordLength"] >= 32
    assert secret["ExcludePunctuation"] is True  # a header value, no quoting trouble


def test_the_app_and_the_template_name_the_same_header():
    assert origin("chat")["OriginCustomHeaders"][0]["HeaderName"] == ORIGIN_VERIFY_HEADER


@pytest.mark.parametrize("path", ["/api/agent/chat", "/api/assistant/conversations"])
def test_cloudfront_forwards_the_viewer_address_the_functions_count_attempts_by(path):
    # The managed AllViewerExceptHostHeader policy adds CloudFront's viewer headers
    # (CloudFront-Viewer-Address among them) to each origin request
    assert behaviour(path)["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST_HEADER


@pytest.mark.parametrize("path", API_PATHS)
def test_the_rest_of_the_api_goes_to_api_gateway_at_its_stage(path):
    chosen = behaviour(path)
    api = origin(chosen["TargetOriginId"])
    assert api["DomainName"] == {
        "Fn::Sub": "${ChatApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"
    }
    assert api["OriginPath"] == {"Fn::Sub": "/${Stage}"}
    assert api["CustomOriginConfig"]["OriginProtocolPolicy"] == "https-only"
    assert chosen["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST_HEADER  # its own Host


def test_no_behaviour_caches_the_api():
    for candidate in every_behaviour():
        if candidate["TargetOriginId"] in {"chat", "api"}:
            assert candidate["CachePolicyId"] == CACHING_DISABLED, candidate.get("PathPattern")
    # and every API path lands on an API behaviour, never on the page's
    for path in CHAT_PATHS + API_PATHS + ["/api/anything/else"]:
        assert behaviour(path)["TargetOriginId"] in {"chat", "api"}, path


def test_the_stack_tells_where_the_page_is():
    outputs = load_template()["Outputs"]
    assert outputs["PageUrl"]["Value"] == {
        "Fn::Sub": "https://${PageDistribution.DomainName}/agent/"
    }
    assert outputs["PageDistributionDomainName"]["Value"] == {
        "Fn::GetAtt": ["PageDistribution", "DomainName"]
    }
    assert outputs["PageDistributionId"]["Value"] == {"Ref": "PageDistribution"}
    assert outputs["PageBucketName"]["Value"] == {"Ref": "PageBucket"}


@pytest.mark.parametrize("path", [*PAGE_PATHS, "/agent", "/"])
def test_the_page_is_served_with_the_same_security_headers_as_locally(path):
    # Given the page's behaviours in AWS and the headers the local stack sends with the page
    policy = resource("PageSecurityHeadersPolicy")["ResponseHeadersPolicyConfig"]
    headers = policy["SecurityHeadersConfig"]
    # Then every page path gets the policy, whose CSP is the local stack's, word for word
    assert behaviour(path)["ResponseHeadersPolicyId"] == {"Ref": "PageSecurityHeadersPolicy"}
    # (but for where uploads go: the attachment bucket's regional endpoint, moto's locally)
    csp = headers["ContentSecurityPolicy"]
    assert csp == {
        "ContentSecurityPolicy": {"Fn::Sub": content_security_policy(ATTACHMENT_ENDPOINT)},
        "Override": True,
    }
    local = security_headers()
    assert headers["ReferrerPolicy"]["ReferrerPolicy"] == local["Referrer-Policy"]
    assert headers["ContentTypeOptions"] == {"Override": True}
    assert headers["StrictTransportSecurity"]["AccessControlMaxAgeSec"] >= 31536000


# File attachments (docs/attachments.md): the bucket is named, not referenced, by everything the
# distribution reaches (the functions, their roles, the page's CSP): its CORS rule names the
# distribution, so a reference would be a cycle (a broken copy below proves cfn-lint sees it).
ATTACHMENT_BUCKET_NAME = "sstools-agent-${Stage}-attachments-${AWS::AccountId}"
ATTACHMENT_ENDPOINT = f"https://{ATTACHMENT_BUCKET_NAME}.s3.${{AWS::Region}}.${{AWS::URLSuffix}}"
ATTACHMENT_FUNCTIONS = ["ChatFunction", "ApiFunction"]


def role_statements(function: str) -> list[dict[str, Any]]:
    """Every statement of a function's role, its SAM policy templates expanded (a policy under
    a condition, `Fn::If`, as if it held)."""
    role = resource(resource(function)["Role"]["Fn::GetAtt"][0])
    policies = [p["Fn::If"][1] if "Fn::If" in p else p for p in role.get("Policies", [])]
    return [statement for policy in policies for statement in policy["PolicyDocument"]["Statement"]]


def granted(function: str, action: str) -> list[Any]:
    """The resources a function's role may `action`, as the translated template writes them."""
    found = []
    for statement in role_statements(function):
        actions = statement["Action"]
        if statement["Effect"] == "Allow" and action in (
            [actions] if isinstance(actions, str) else actions
        ):
            resources = statement["Resource"]
            found.extend(resources if isinstance(resources, list) else [resources])
    return found


def attachment_arn(suffix: str = "") -> dict[str, Any]:
    """An ARN of the attachment bucket (or of its objects) as the template writes it."""
    return {"Fn::Sub": f"arn:${{AWS::Partition}}:s3:::{ATTACHMENT_BUCKET_NAME}{suffix}"}


def sam_bucket_arn(suffix: str = "") -> dict[str, Any]:
    """The same, as SAM's S3 policy templates expand `BucketName`."""
    return {
        "Fn::Sub": [
            f"arn:${{AWS::Partition}}:s3:::${{bucketName}}{suffix}",
            {"bucketName": {"Fn::Sub": ATTACHMENT_BUCKET_NAME}},
        ]
    }


def test_the_attachment_bucket_is_private_encrypted_and_tls_only():
    bucket = resource("AttachmentBucket")
    assert bucket["BucketName"] == {"Fn::Sub": ATTACHMENT_BUCKET_NAME}
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert bucket["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    (encryption,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
    policy = resource("AttachmentBucketPolicy")
    assert policy["Bucket"] == {"Ref": "AttachmentBucket"}
    # Nothing is granted to anyone by the bucket: only the functions' roles reach it
    (deny,) = policy["PolicyDocument"]["Statement"]
    assert (deny["Effect"], deny["Principal"], deny["Action"]) == ("Deny", "*", "s3:*")
    assert deny["Resource"] == [
        {"Fn::GetAtt": ["AttachmentBucket", "Arn"]},
        {"Fn::Sub": "${AttachmentBucket.Arn}/*"},
    ]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": False}}


def test_uploads_never_attached_expire_after_a_day_and_attached_files_do_not():
    rules = resource("AttachmentBucket")["LifecycleConfiguration"]["Rules"]
    assert all(rule["Status"] == "Enabled" for rule in rules)
    expiring = [rule for rule in rules if "ExpirationInDays" in rule]
    (uploads,) = expiring  # attachments/ lives as long as its conversation
    assert uploads["Prefix"] == "uploads/"
    assert uploads["ExpirationInDays"] == 1
    aborts = [rule["AbortIncompleteMultipartUpload"] for rule in rules if "Prefix" not in rule]
    assert aborts == [{"DaysAfterInitiation": 1}]  # bucket-wide


def test_only_the_pages_origin_may_post_uploads_across_origins():
    (rule,) = resource("AttachmentBucket")["CorsConfiguration"]["CorsRules"]
    assert rule["AllowedMethods"] == ["POST"]  # downloads are navigations: no GET rule
    assert rule["AllowedOrigins"] == [{"Fn::Sub": "https://${PageDistribution.DomainName}"}]
    assert rule["AllowedHeaders"] == ["*"]
    assert rule["MaxAge"] > 0


def test_the_page_may_connect_to_the_attachment_bucket_and_nowhere_else():
    policy = resource("PageSecurityHeadersPolicy")["ResponseHeadersPolicyConfig"]
    csp = policy["SecurityHeadersConfig"]["ContentSecurityPolicy"]["ContentSecurityPolicy"]
    directives = dict(d.strip().split(" ", 1) for d in csp["Fn::Sub"].split(";"))
    # The bucket's regional endpoint (its RegionalDomainName), which virtual-host presigned
    # POSTs name; form-action stays 'self': the page uploads with fetch, not a form
    assert directives["connect-src"] == f"'self' {ATTACHMENT_ENDPOINT}"
    assert directives["form-action"] == "'self'"


@pytest.mark.parametrize("function", ATTACHMENT_FUNCTIONS)
def test_both_functions_are_told_the_attachment_bucket_and_its_limits(function):
    variables = resource(function)["Environment"]["Variables"]
    assert variables["ATTACHMENT_BUCKET"] == {"Fn::Sub": ATTACHMENT_BUCKET_NAME}
    assert variables["ATTACHMENT_MAX_BYTES"] == {"Ref": "AttachmentMaxBytes"}
    assert variables["ATTACHMENT_MAX_FILES"] == {"Ref": "AttachmentMaxFiles"}
    parameters = load_template()["Parameters"]
    assert parameters["AttachmentMaxBytes"]["Default"] == 10485760
    assert parameters["AttachmentMaxFiles"]["Default"] == 5


def test_the_rest_api_may_presign_uploads_under_uploads_and_downloads():
    # Its role signs the presigned POST, so it must be allowed the put, and only under uploads/
    assert granted("ApiFunction", "s3:PutObject") == [attachment_arn("/uploads/*")]
    assert sam_bucket_arn("/*") in granted("ApiFunction", "s3:GetObject")
    # ListBucket: a missing key answers 404, not 403
    assert sam_bucket_arn() in granted("ApiFunction", "s3:ListBucket")
    assert sam_bucket_arn("/*") not in granted("ApiFunction", "s3:DeleteObject")


def test_the_chat_function_may_check_move_and_remove_attached_files():
    for action, arn in [
        ("s3:GetObject", sam_bucket_arn("/*")),
        ("s3:PutObject", sam_bucket_arn("/*")),
        ("s3:DeleteObject", sam_bucket_arn("/*")),
        ("s3:ListBucket", sam_bucket_arn()),
    ]:
        assert arn in granted("ChatFunction", action), action


def test_the_attachment_bucket_is_reached_by_name_because_a_reference_would_be_a_cycle(tmp_path):
    # Given the chat function told the bucket by a reference instead of its name
    copy = broken_copy(
        tmp_path,
        lambda t: t.replace(
            f"ATTACHMENT_BUCKET: !Sub {ATTACHMENT_BUCKET_NAME}",
            "ATTACHMENT_BUCKET: !Ref AttachmentBucket",
            1,
        ),
    )
    # Then the check finds the cycle through the distribution
    problems = check_template(copy)
    assert any("E3004" in p and "AttachmentBucket" in p for p in problems), problems


# Operations (docs/deploy.md, "First week"): log retention, alarms to a topic, a dashboard, the
# audit rule's dead-letter queue, reserved concurrency. An alarm's metric must be one the code
# emits, or it never sees a datapoint: the emitted set is read from the code's own calls.
ROOT = TEMPLATE_PATH.parent
CODE = [
    *(ROOT / "layers" / "common" / "sstools_agent").rglob("*.py"),
    *(ROOT / "functions").rglob("*.py"),
]
AWS_NAMESPACES = {"AWS/Lambda", "AWS/SQS", "AWS/States"}
FUNCTIONS = sorted(
    name
    for name, r in load_template()["Resources"].items()
    if r["Type"] == "AWS::Serverless::Function"
)


def calls_to(attribute: str) -> list[ast.Call]:
    """Every call `<something>.<attribute>(...)` in the functions' code and our package."""
    found = []
    for path in CODE:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == attribute
                and ast.unparse(node.func.value) != "super()"  # a wrapper's pass-through
            ):
                found.append(node)
    return found


@functools.cache
def emitted_metric_names() -> frozenset[str]:
    """The names the code passes to `add_metric`: a `MetricName` member or a literal."""
    names = set()
    for call in calls_to("add_metric"):
        name = (
            call.args[0] if call.args else next(k.value for k in call.keywords if k.arg == "name")
        )
        if isinstance(name, ast.Attribute) and ast.unparse(name.value) == "MetricName":
            names.add(MetricName[name.attr].value)
        elif isinstance(name, ast.Constant) and isinstance(name.value, str):
            names.add(name.value)
        else:  # a name the scan cannot read would make the check silently narrower
            raise AssertionError(f"add_metric with an unreadable name: {ast.unparse(call)}")
    return frozenset(names)


@functools.cache
def metric_services() -> frozenset[str]:
    """The `service` dimension values the code's metrics carry (`Observability.of("<name>")`)."""
    services = set()
    for call in calls_to("of"):
        assert isinstance(call.func, ast.Attribute)  # (calls_to finds only these)
        if ast.unparse(call.func.value) != "Observability":
            continue
        (service,) = call.args
        assert isinstance(service, ast.Constant), ast.unparse(call)
        assert isinstance(service.value, str), ast.unparse(call)
        services.add(service.value)
    return frozenset(services)


def of_type(kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in cloudformation()["Resources"].items() if r["Type"] == kind}


def alarms() -> dict[str, dict[str, Any]]:
    return {name: r["Properties"] for name, r in of_type("AWS::CloudWatch::Alarm").items()}


def placeholder(value: Any) -> str:
    """A dimension value as the dashboard's `!Sub` body writes it: `${Function}`, `${Q.Name}`."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return f"${{{value['Ref']}}}"
    logical_id, attribute = value["Fn::GetAtt"]
    return f"${{{logical_id}.{attribute}}}"


def identity(alarm: dict[str, Any]) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """What names an alarm's metric in CloudWatch: namespace, name, dimensions."""
    dimensions = tuple(sorted((d["Name"], placeholder(d["Value"])) for d in alarm["Dimensions"]))
    return alarm["Namespace"], alarm["MetricName"], dimensions


def test_the_code_emits_every_metric_it_names():
    # (the scan's own check: it finds the calls, and each name of the registry is emitted)
    assert emitted_metric_names() == {name.value for name in MetricName}
    assert {"chat", "api", "expiry"} <= metric_services()


def unseen(namespace: str, metric: str, dimensions: tuple[tuple[str, str], ...]) -> str | None:
    """Why a metric so named never gets a datapoint, or None if something publishes it."""
    if namespace.startswith("AWS/"):
        return None if namespace in AWS_NAMESPACES else f"namespace {namespace}"
    if namespace != METRICS_NAMESPACE:
        return f"namespace {namespace}"
    if metric not in emitted_metric_names():
        return f"{metric} is never emitted"
    # Powertools adds one dimension, the service: an alarm on any other set sees nothing
    if [name for name, _ in dimensions] != ["service"]:
        return f"dimensions {dimensions}"
    if dimensions[0][1] not in metric_services():
        return f"no service {dimensions[0][1]}"
    return None


def test_every_alarm_watches_a_metric_the_code_emits_or_aws_publishes():
    assert alarms(), "no alarm"
    assert {name: unseen(*identity(alarm)) for name, alarm in alarms().items()} == dict.fromkeys(
        alarms()
    )


@pytest.mark.parametrize(
    "edit",
    [
        {"MetricName": "ToolFailure"},  # a typo
        {"Namespace": "SsToolsAgents"},
        {"Dimensions": [{"Name": "service", "Value": "tools"}]},  # no such service
        {"Dimensions": [{"Name": "function", "Value": "chat"}]},
        {"Dimensions": []},  # the metric without its service dimension is another metric
    ],
)
def test_an_alarm_on_a_metric_nothing_emits_is_found(edit):
    alarm = alarms()["ToolFailuresAlarm"] | edit
    assert unseen(*identity(alarm)) is not None


def alarm_on(namespace: str, metric: str, **dimensions: Any) -> dict[str, Any]:
    wanted = tuple(sorted((k, placeholder(v)) for k, v in dimensions.items()))
    found = [a for a in alarms().values() if identity(a) == (namespace, metric, wanted)]
    assert len(found) == 1, (namespace, metric, dimensions, len(found))
    return found[0]


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_function_has_an_errors_and_a_throttles_alarm(function):
    for metric in ("Errors", "Throttles"):
        alarm = alarm_on("AWS/Lambda", metric, FunctionName={"Ref": function})
        assert (alarm["Statistic"], alarm["Threshold"]) == ("Sum", 1)
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


def test_the_operational_alarms_watch_what_the_issue_names():
    first_event = alarm_on(METRICS_NAMESPACE, "TimeToFirstEvent", service="chat")
    assert first_event["ExtendedStatistic"] == "p95"
    assert first_event["Threshold"] == {"Ref": "TimeToFirstEventP95ThresholdMs"}
    failures = alarm_on(METRICS_NAMESPACE, "ToolFailures", service="chat")
    expired = alarm_on(METRICS_NAMESPACE, "ConfirmationsExpired", service="expiry")
    for hourly, threshold in [
        (failures, "ToolFailuresPerHourThreshold"),
        (expired, "ConfirmationsExpiredPerHourThreshold"),
    ]:
        assert (hourly["Statistic"], hourly["Period"]) == ("Sum", 3600)
        assert hourly["Threshold"] == {"Ref": threshold}
    queue = {"Fn::GetAtt": ["AuditDeadLetterQueue", "QueueName"]}
    depth = alarm_on("AWS/SQS", "ApproximateNumberOfMessagesVisible", QueueName=queue)
    assert (depth["Statistic"], depth["Threshold"]) == ("Maximum", 0)
    assert depth["ComparisonOperator"] == "GreaterThanThreshold"
    # An idle queue stops reporting after hours: the alarm keeps its state, it does not clear
    assert depth["TreatMissingData"] == "ignore"
    machine = {"Ref": "ConfirmationStateMachine"}
    failed = alarm_on("AWS/States", "ExecutionsFailed", StateMachineArn=machine)
    assert (failed["Statistic"], failed["Threshold"]) == ("Sum", 1)


def test_a_refused_policy_set_alarms_at_once_and_log_only_decisions_are_drawn():
    refused = alarm_on(METRICS_NAMESPACE, "PolicySetsRefused", service="chat")
    assert (refused["Statistic"], refused["Period"], refused["Threshold"]) == ("Sum", 300, 1)
    assert refused["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    drawn = dashboard_metrics()
    assert (METRICS_NAMESPACE, "LogOnlyDecisions", (("service", "chat"),)) in drawn


def test_alarms_notify_the_topic_when_one_is_given_and_nobody_otherwise():
    parameter = load_template()["Parameters"]["AlarmTopicArn"]
    assert parameter["Default"] == ""
    assert load_template()["Conditions"]["HasAlarmTopic"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmTopicArn"}, ""]}]
    }
    topic = {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}
    for name, alarm in alarms().items():
        assert alarm["AlarmActions"] == topic, name
        assert alarm["OKActions"] == topic, name  # and the recovery


def dashboard_metrics() -> set[tuple[str, str, tuple[tuple[str, str], ...]]]:
    """Every metric the dashboard draws (its body is a `!Sub` of JSON; placeholders kept)."""
    (dashboard,) = of_type("AWS::CloudWatch::Dashboard").values()
    # (a number substituted unquoted, an annotation's threshold, read as 0)
    text = re.sub(r"(?<=: )\$\{\w+\}", "0", dashboard["Properties"]["DashboardBody"]["Fn::Sub"])
    body = json.loads(text)
    drawn = set()
    for widget in body["widgets"]:
        for line in widget["properties"].get("metrics", []):
            fields = [f for f in line if not isinstance(f, dict)]
            namespace, metric, *pairs = fields
            dimensions = tuple(sorted(zip(pairs[::2], pairs[1::2], strict=True)))
            drawn.add((namespace, metric, dimensions))
    return drawn


def test_the_dashboard_draws_every_alarmed_metric_and_only_metrics_that_exist():
    drawn = dashboard_metrics()
    for name, alarm in alarms().items():
        assert identity(alarm) in drawn, name
    assert {line: unseen(*line) for line in drawn} == dict.fromkeys(drawn)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_function_logs_to_a_group_kept_for_the_retention_parameter(function):
    groups = [
        r["Properties"]
        for r in of_type("AWS::Logs::LogGroup").values()
        if r["Properties"]["LogGroupName"] == {"Fn::Sub": f"/aws/lambda/${{{function}}}"}
    ]
    assert len(groups) == 1, f"{function} keeps its logs forever"
    assert groups[0]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert load_template()["Parameters"]["LogRetentionDays"]["Default"] == 30


AUDIT_RULE = "AuditFunctionAuditEvents"  # SAM's name for AuditFunction's rule AuditEvents


def test_an_audit_event_the_function_cannot_take_lands_in_an_encrypted_queue():
    # The rule's target: retried for a day, then put in the queue, not dropped
    (target,) = resource(AUDIT_RULE)["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": ["AuditFunction", "Arn"]}
    queue_arn = {"Fn::GetAtt": ["AuditDeadLetterQueue", "Arn"]}
    assert target["DeadLetterConfig"] == {"Arn": queue_arn}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 1
    assert 60 <= target["RetryPolicy"]["MaximumEventAgeInSeconds"] <= 86400
    # The function's own failures (EventBridge hands the event over asynchronously; Lambda's
    # retries end there): the same queue
    assert resource("AuditFunction")["DeadLetterConfig"] == {"TargetArn": queue_arn}
    queue = resource("AuditDeadLetterQueue")
    assert queue.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in queue
    assert queue["MessageRetentionPeriod"] == 1209600  # SQS's longest, 14 days


def test_only_the_audit_rule_may_send_to_the_audit_queue():
    (policy,) = [
        r["Properties"]
        for r in of_type("AWS::SQS::QueuePolicy").values()
        if r["Properties"]["Queues"] == [{"Ref": "AuditDeadLetterQueue"}]
    ]
    allowed = [s for s in policy["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    (grant,) = allowed
    assert grant["Principal"] == {"Service": "events.amazonaws.com"}
    assert grant["Action"] == "sqs:SendMessage"
    assert grant["Resource"] == {"Fn::GetAtt": ["AuditDeadLetterQueue", "Arn"]}
    assert grant["Condition"] == {
        "ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": [AUDIT_RULE, "Arn"]}}
    }


def test_the_audit_bus_is_archived_for_replay():
    (archive,) = of_type("AWS::Events::Archive").values()
    assert archive["Properties"]["SourceArn"] == {"Fn::GetAtt": ["AuditBus", "Arn"]}
    assert archive["Properties"]["RetentionDays"] >= 400  # as long as the audit table keeps items
    outputs = load_template()["Outputs"]
    assert outputs["AuditArchiveArn"]["Value"] == {"Fn::GetAtt": ["AuditArchive", "Arn"]}
    assert outputs["AuditBusArn"]["Value"] == {"Fn::GetAtt": ["AuditBus", "Arn"]}
    # (a replay names the audit rule, so the expiry function does not tell old expiries again)
    assert outputs["AuditRuleArn"]["Value"] == {"Fn::GetAtt": [AUDIT_RULE, "Arn"]}
    assert outputs["AuditDeadLetterQueueUrl"]["Value"] == {"Ref": "AuditDeadLetterQueue"}


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_functions_reserved_concurrency_is_a_parameter_unset_by_default(function):
    parameter_name = f"{function.removesuffix('Function')}ReservedConcurrency"
    parameter = load_template()["Parameters"][parameter_name]
    assert (parameter["Type"], parameter["Default"], parameter["MinValue"]) == ("Number", -1, -1)
    reserved = resource(function)["ReservedConcurrentExecutions"]
    condition, value, otherwise = reserved["Fn::If"]
    assert (value, otherwise) == ({"Ref": parameter_name}, {"Ref": "AWS::NoValue"})
    assert load_template()["Conditions"][condition] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": parameter_name}, "-1"]}]
    }


# SnapStart (docs/deploy.md): it applies to published versions only, so whatever invokes the chat
# and REST API functions must name their `live` alias; an invoker left on the function itself
# runs $LATEST, where SnapStart silently does nothing.
SNAPSTART_FUNCTIONS = ["ChatFunction", "ApiFunction"]
INVOKERS = {
    "AWS::Lambda::Url": "TargetFunctionArn",
    "AWS::Lambda::Permission": "FunctionName",
    "AWS::Lambda::EventSourceMapping": "FunctionName",
}
SUB_NAME = re.compile(r"\$\{([A-Za-z0-9]+)(?:\.[A-Za-z]+)?\}")


def referenced(node: Any) -> set[str]:
    """The logical ids a piece of the template names (Ref, GetAtt, ${...} inside Sub)."""
    if isinstance(node, list):
        return set().union(*map(referenced, node)) if node else set()
    if not isinstance(node, dict):
        return set()
    if "Ref" in node:
        return {node["Ref"]}
    if "Fn::GetAtt" in node:
        target = node["Fn::GetAtt"]
        return {target[0] if isinstance(target, list) else target.split(".")[0]}
    if "Fn::Sub" in node:
        sub = node["Fn::Sub"]
        text, values = (sub, {}) if isinstance(sub, str) else (sub[0], sub[1])
        return set(SUB_NAME.findall(text)) | referenced(list(values.values()))
    return referenced(list(node.values()))


def integration_uris(body: Any) -> list[Any]:
    """Every `x-amazon-apigateway-integration` uri of an OpenAPI body."""
    if isinstance(body, list):
        return [uri for item in body for uri in integration_uris(item)]
    if not isinstance(body, dict):
        return []
    found = (
        [body["x-amazon-apigateway-integration"]["uri"]]
        if ("x-amazon-apigateway-integration" in body)
        else []
    )
    return found + [uri for value in body.values() for uri in integration_uris(value)]


def alias_of(function: str) -> str:
    """The logical id of the function's `live` alias (AutoPublishAlias)."""
    aliases: list[str] = [
        name
        for name, found in cloudformation()["Resources"].items()
        if found["Type"] == "AWS::Lambda::Alias"
        and found["Properties"]["FunctionName"] == {"Ref": function}
    ]
    (alias,) = aliases
    return alias


def invokers() -> list[tuple[str, set[str]]]:
    """(where, the ids it names) for everything that invokes a function: function URLs,
    invoke permissions, event source mappings and API Gateway integrations."""
    found: list[tuple[str, set[str]]] = []
    for name, item in cloudformation()["Resources"].items():
        properties = item.get("Properties", {})
        if item["Type"] in INVOKERS:
            found.append((name, referenced(properties[INVOKERS[item["Type"]]])))
        if item["Type"] == "AWS::ApiGateway::RestApi":
            uris = integration_uris(properties.get("Body", {}))
            found += [(f"{name} integration {i}", referenced(uri)) for i, uri in enumerate(uris)]
    return found


def test_snapstart_is_on_by_default_for_published_versions_and_a_parameter_turns_it_off():
    template = load_template()
    assert template["Parameters"]["SnapStart"]["Default"] == "enabled"
    assert template["Conditions"]["SnapStartEnabled"] == {
        "Fn::Equals": [{"Ref": "SnapStart"}, "enabled"]
    }
    for function in SNAPSTART_FUNCTIONS:
        assert resource(function)["SnapStart"] == {
            "ApplyOn": {"Fn::If": ["SnapStartEnabled", "PublishedVersions", "None"]}
        }
        assert cloudformation()["Resources"][alias_of(function)]["Properties"]["Name"] == "live"


@pytest.mark.parametrize("function", SNAPSTART_FUNCTIONS)
def test_every_invoker_of_a_snapstart_function_names_its_alias_not_latest(function):
    alias = alias_of(function)
    reaching = [(where, names) for where, names in invokers() if names & {function, alias}]
    assert reaching, f"nothing invokes {function}: the check would prove nothing"
    on_latest = [where for where, names in reaching if function in names]
    assert on_latest == []
    # The chat function: its URL (CloudFront's origin), ChatApi's six integrations (chat, AG-UI,
    # Gradio, cancel, the approvals list and decision) and their four permissions, the URL's two
    # public permissions; the REST API: four and one. (The confirmation state machine invokes it
    # by the name it is given at run time, with the alias: see the next test.)
    assert len(reaching) == (13 if function == "ChatFunction" else 5)


def test_the_state_machine_may_invoke_only_the_chat_functions_alias():
    statements = [
        statement
        for policy in load_template()["Resources"]["ConfirmationStateMachine"]["Properties"][
            "Policies"
        ]
        if isinstance(policy, dict)
        for statement in policy.get("Statement", [])
        if statement.get("Action") == "lambda:InvokeFunction"
    ]
    assert len(statements) == 1
    arn = statements[0]["Resource"]["Fn::Sub"]
    assert arn.endswith(":function:${AWS::StackName}-ChatFunction-*:live"), arn
    variables = resource("ChatFunction")["Environment"]["Variables"]
    assert variables["CHAT_FUNCTION_ALIAS"] == "live"
    assert variables["AWS_LWA_PASS_THROUGH_PATH"] == SECOND_DECISION_PATH


def test_cloudfront_reaches_the_chat_function_through_its_alias_url():
    (url,) = referenced(origin("chat")["DomainName"])
    assert cloudformation()["Resources"][url]["Type"] == "AWS::Lambda::Url"
    assert resource(url)["TargetFunctionArn"] == {"Ref": alias_of("ChatFunction")}


def test_the_adapter_calls_the_apps_snapstart_hooks():
    # Version 28 (v1.1.0) is the first adapter that calls them; the paths are the app's own.
    for architecture in ("Arm64", "X86"):
        layer = load_template()["Parameters"][f"LambdaWebAdapterLayerArn{architecture}"]["Default"]
        assert int(layer.rsplit(":", 1)[1]) >= 28
    variables = resource("ChatFunction")["Environment"]["Variables"]
    assert variables["AWS_LWA_SNAPSTART_BEFORE_CHECKPOINT_PATH"] == BEFORE_CHECKPOINT_PATH
    assert variables["AWS_LWA_SNAPSTART_AFTER_RESTORE_PATH"] == AFTER_RESTORE_PATH
    assert "AWS_LWA_ASYNC_INIT" not in variables  # ignored under SnapStart


def test_offloaded_checkpoints_expire_with_the_ones_in_dynamodb():
    # The saver no longer sets the bucket's lifecycle at start: the template's rule is the only one
    (rule,) = resource("CheckpointBucket")["LifecycleConfiguration"]["Rules"]
    assert "Prefix" not in rule
    assert "Filter" not in rule
    assert (
        rule["ExpirationInDays"] == CheckpointSettings.model_fields["checkpoint_ttl_days"].default
    )
